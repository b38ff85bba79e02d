/**
 * The wrong person's press on an approval button is refused by the ingress, before it is
 * stored (issue 30): the adapter then answers the presser privately while the press is live.
 * The asker, an admin, a press on another request and any other button go on to the turn.
 */
import type { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import type { InboundMessage } from "../../../src/core/channel.js";
import type { PendingApproval } from "../../../src/core/tools.js";
import { AccessControl, accessListsFrom } from "../../../src/gateway/access.js";
import { Ingress } from "../../../src/gateway/ingress.js";
import { silentLogger } from "../../../src/logger.js";
import { createProducers, createRedis, type Producers } from "../../../src/queue/index.js";
import { newSessionState } from "../../../src/session/state.js";
import { SessionStore } from "../../../src/session/store.js";
import { testConfig } from "../../helpers/config.js";
import { inbound } from "../../helpers/recording-adapter.js";

const CHANNEL = "300000000000000001";
const ADA = "400000000000000001";
const BOB = "400000000000000002";
const ADMIN = "400000000000000009";
const APPROVAL = "5f0c1d2e-1111-4222-8333-944455556666";

const pending = (): PendingApproval => ({
  id: APPROVAL,
  requestedBy: { platform: "discord", userId: ADA, userName: "Ada L." },
  requestedAt: Date.now(),
  expiresAt: Date.now() + 600_000,
  target: { platform: "discord", chatId: CHANNEL },
  assistant: { id: "a1", at: Date.now(), role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "files__write_file", arguments: "{}" } }] },
  results: [],
  waiting: [{ callId: "c1", name: "files__write_file", arguments: "{}" }],
  step: 1,
  inReplyTo: ["600000000000000001"],
  scope: { chatId: CHANNEL, userIds: [ADA] },
} as PendingApproval);

const press = (userId: string, actionId = `approve:${APPROVAL}`): InboundMessage => inbound({
  platform: "discord", chatId: CHANNEL, chatType: "group", userId, userName: userId === ADA ? "Ada L." : "Bob",
  messageId: `ix:${Math.random().toString().slice(2)}`, text: actionId, action: { id: actionId, sourceMessageId: "700000000000000001" },
});

describe("Ingress: a press on someone else's approval request", () => {
  let redis: Redis | undefined;
  let producers: Producers | undefined;
  afterEach(async () => {
    await producers?.close();
    redis?.disconnect();
  });

  async function setUp(): Promise<{ ingress: Ingress; store: SessionStore }> {
    const config = testConfig({ ALLOWED_DISCORD_CHANNELS: CHANNEL });
    redis = createRedis(config.REDIS_URL!);
    const store = new SessionStore(redis, config.REDIS_PREFIX);
    producers = createProducers(redis, config.REDIS_PREFIX);
    const ingress = new Ingress({
      store, producers, redis, prefix: config.REDIS_PREFIX,
      access: new AccessControl(redis, config.REDIS_PREFIX, accessListsFrom(config)),
      maxMessageChars: config.MAX_MESSAGE_CHARS, rateLimitPerMinute: 0, logger: silentLogger,
      approvalAdmins: { discord: [ADMIN] },
    });
    await redis.set(store.keys(`dc:${CHANNEL}`).state, JSON.stringify({ ...newSessionState(Date.now()), live: [], pendingApproval: pending() }));
    return { ingress, store };
  }

  it("is refused with the notice for the presser, and not stored", async () => {
    const { ingress, store } = await setUp();
    expect(await ingress.submit(press(BOB))).toEqual({ status: "refused", notice: "Only Ada L., who asked, or an admin can answer this request." });
    expect(await ingress.submit(press(BOB, `deny:${APPROVAL}`))).toMatchObject({ status: "refused" });
    expect(await store.inboxLength(`dc:${CHANNEL}`)).toBe(0);
  });

  it("the asker's, an admin's, a press on another request and a button that is no approval's go on to the turn", async () => {
    const { ingress, store } = await setUp();
    expect(await ingress.submit(press(ADA))).toEqual({ status: "accepted" });
    expect(await ingress.submit(press(ADMIN, `deny:${APPROVAL}`))).toEqual({ status: "accepted" });
    // Answered already or superseded: the turn says so and takes the buttons away.
    expect(await ingress.submit(press(BOB, "approve:0a0b0c0d-1111-4222-8333-944455556666"))).toEqual({ status: "accepted" });
    expect(await ingress.submit(press(BOB, "something-else"))).toEqual({ status: "accepted" });
    expect(await store.inboxLength(`dc:${CHANNEL}`)).toBe(4);
  });
});
