/**
 * Setup's pairing step on Discord: the real Discord adapter against the fake gateway and REST,
 * with setup's pairing desk as its ingress on real Redis. A stranger's DM gets the gateway's own
 * pairing notice and reaches setup as a candidate; approving it in place admits the user
 * (src/operator, logged with the terminal's operator) and tells them in the DM; a DM from an
 * admitted user is reported as already allowed; a guild message is never a candidate.
 */
import { Writable } from "node:stream";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DiscordAdapter } from "../../../src/adapters/discord/index.js";
import { AccessControl } from "../../../src/gateway/access.js";
import { createLogger } from "../../../src/logger.js";
import { approveInPlace, PairingDesk } from "../../../src/setup/pairing.js";
import { FAKE_TOKEN, IDS } from "../../fakes/fake-discord-world.js";
import { FakeDiscord } from "../../fakes/fake-discord.js";
import { uniquePrefix } from "../../helpers/config.js";
import { fixture, mention } from "../../helpers/discord-pipeline.js";

describe("setup's pairing desk on Discord", () => {
  let fake: FakeDiscord;
  let redis: Redis;
  let adapter: DiscordAdapter;
  const logLines: string[] = [];
  const logger = createLogger({ level: "info", destination: new Writable({ write(chunk, _encoding, done) { logLines.push(String(chunk)); done(); } }) });

  beforeEach(async () => {
    fake = await FakeDiscord.start();
    redis = new Redis(inject("redisUrl"));
    adapter = new DiscordAdapter({ token: FAKE_TOKEN, apiRoot: fake.apiRoot, logger });
  });
  afterEach(async () => {
    await adapter.stop();
    await fake.close();
    redis.disconnect();
  });

  it("hears a stranger's DM, approves it in place and tells them; an admitted user is already allowed", async () => {
    const access = new AccessControl(redis, uniquePrefix("pair"), { users: {}, chats: {} });
    const desk = new PairingDesk(access);
    await adapter.start(desk);
    const waiting = desk.next(AbortSignal.timeout(20_000));

    // A mention in a guild channel the operator has not enabled: silence, and no candidate.
    fake.dispatchMessage(mention(IDS.textChannel, "600000000000000501", "hello bot"));
    fake.dispatchMessage(fixture("dm", { id: "600000000000000502", content: "it's me" }));
    const candidate = await waiting;
    expect(candidate.message).toMatchObject({ platform: "discord", userId: IDS.user, chatId: IDS.dmChannel, text: "it's me" });
    expect(candidate.request?.code).toMatch(/^[A-Z2-9]{8}$/);
    await expect.poll(() => fake.botMessages(IDS.dmChannel).map((message) => String(message.content))).toContainEqual(expect.stringContaining(`Your pairing code is ${candidate.request!.code}`));

    const approved = await approveInPlace({ access, logger, adapter }, candidate);
    expect(approved).toMatchObject({ platform: "discord", userId: IDS.user });
    expect(await access.isUserAllowed("discord", IDS.user)).toBe(true);
    expect(fake.botMessages(IDS.dmChannel).map((message) => String(message.content))).toContainEqual(expect.stringContaining("You're paired"));
    const actions = logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === "operator-action");
    expect(actions).toEqual([expect.objectContaining({ operator: expect.stringMatching(/^cli:/), action: "pairing-approve", found: true, userId: IDS.user })]);

    // Once admitted, a DM is reported as already allowed (no code), and the user is told so.
    const again = desk.next(AbortSignal.timeout(20_000));
    fake.dispatchMessage(fixture("dm", { id: "600000000000000503", content: "still me" }));
    expect((await again).request).toBeUndefined();
    await expect.poll(() => fake.botMessages(IDS.dmChannel).map((message) => String(message.content))).toContainEqual(expect.stringContaining("You can already talk to this bot"));
    // The guild mention never became a candidate, nor got an answer.
    expect(fake.botMessages(IDS.textChannel)).toEqual([]);
  });
});
