/**
 * The operator's actions (src/operator): pairing approve / deny and dead-letter retry / drop,
 * through the CLI's functions on a real Redis and the real pipeline. The web console calls the
 * same functions (test/integration/web/console.test.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import type { OutboundReply, SendOptions } from "../../../src/adapters/channel-adapter.js";
import { AdminUsageError, runAdmin } from "../../../src/cli/admin-commands.js";
import { AccessControl } from "../../../src/gateway/access.js";
import { approvePairing, denyPairing } from "../../../src/operator/index.js";
import { listDeadLetters } from "../../../src/session/dead-letters.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { captureLogs, startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

/** Refuses to send replies that `broken` names, until it is repaired. */
class FlakyAdapter extends RecordingAdapter {
  attempts = 0;
  repaired = false;
  constructor(private readonly broken: (reply: OutboundReply) => boolean) {
    super("console");
  }
  override async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    if (!this.repaired && this.broken(reply)) {
      this.attempts++;
      throw new TypeError("Cannot read properties of undefined (reading 'length')");
    }
    await super.send(reply, options);
  }
}

const operatorLines = (lines: readonly string[]) => lines.filter((line) => line.includes('"operator-action"')).map((line) => JSON.parse(line) as Record<string, unknown>);

describe("operator actions", () => {
  let llm: FakeLlm | undefined;
  let pipeline: Pipeline | undefined;
  let redis: Redis | undefined;
  afterEach(async () => {
    await pipeline?.close();
    await llm?.close();
    redis?.disconnect();
    pipeline = undefined;
  });

  const deadLetterSetup = async () => {
    llm = await startFakeLlm();
    const adapter = new FlakyAdapter((reply) => reply.text.includes("doomed"));
    const config = testConfig({ LLM_BASE_URL: llm.url, DELIVERY_MAX_ATTEMPTS: "2" });
    pipeline = await startPipeline(config, [adapter]);
    redis = new Redis(config.REDIS_URL!);
    await adapter.submit(inbound({ text: "doomed", messageId: "op1" }));
    await adapter.waitFor((sent) => sent.some((entry) => entry.reply.text.includes("could not be delivered")), 60_000);
    const [letter] = await listDeadLetters(redis, config.REDIS_PREFIX);
    expect(letter).toMatchObject({ sessionKey: "console:chat-1", id: expect.stringMatching(/^[0-9a-f]{12}$/) as string });
    return { adapter, config, redis, letter: letter! };
  };

  it("dead-letters retry sends the reply again and takes it out of the dead letters; a second retry finds nothing", async () => {
    const { adapter, config, redis: connection, letter } = await deadLetterSetup();
    const logs = captureLogs("info");
    let printed = "";
    const admin = (...argv: string[]) => runAdmin({ redis: connection, config, now: Date.now(), write: (text) => (printed += text), logger: logs.logger }, argv);
    expect(await admin("dead-letters")).toBe(0);
    expect(printed).toContain(`id ${letter.id}  "echo: doomed"`);

    adapter.repaired = true;
    expect(await admin("dead-letters", "retry", "console:chat-1", letter.id)).toBe(0);
    await adapter.waitFor((sent) => sent.some((entry) => entry.reply.text === "echo: doomed"), 30_000);
    expect(await listDeadLetters(connection, config.REDIS_PREFIX)).toEqual([]);
    expect(await admin("dead-letters", "retry", "console:chat-1", letter.id)).toBe(1);
    expect(printed).toContain(`No dead letter ${letter.id} in console:chat-1.`);
    expect(operatorLines(logs.lines)).toEqual([
      expect.objectContaining({ action: "dead-letter-retry", sessionKey: "console:chat-1", letterId: letter.id, found: true, operator: expect.stringMatching(/^cli:/) as string }),
      expect.objectContaining({ action: "dead-letter-retry", found: false }),
    ]);
  });

  it("dead-letters drop discards the letter without sending it; retry and drop need SESSION and ID", async () => {
    const { adapter, config, redis: connection, letter } = await deadLetterSetup();
    const logs = captureLogs("info");
    const admin = (...argv: string[]) => runAdmin({ redis: connection, config, now: Date.now(), write: () => undefined, logger: logs.logger }, argv);
    await expect(admin("dead-letters", "retry", "console:chat-1")).rejects.toBeInstanceOf(AdminUsageError);
    await expect(admin("dead-letters", "drop")).rejects.toBeInstanceOf(AdminUsageError);
    adapter.repaired = true;
    expect(await admin("dead-letters", "drop", "console:chat-1", letter.id)).toBe(0);
    expect(await listDeadLetters(connection, config.REDIS_PREFIX)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(adapter.sent.map((entry) => entry.reply.text)).not.toContain("echo: doomed");
    expect(operatorLines(logs.lines)).toEqual([expect.objectContaining({ action: "dead-letter-drop", letterId: letter.id, found: true })]);
  });

  it("pairing: a denied code approves nothing and its user is not reminded; another code is approved; both logged with the operator", async () => {
    const config = testConfig();
    redis = new Redis(config.REDIS_URL!);
    const access = new AccessControl(redis, config.REDIS_PREFIX, { users: {}, chats: {} });
    const logs = captureLogs("info");
    const deps = { access, logger: logs.logger };
    const eve = { platform: "telegram" as const, chatId: "77", userId: "77", userName: "Eve", chatType: "private" as const };
    const first = await access.check(eve, 1_000);
    const code = /pairing code is ([A-Z0-9]{8})/.exec(first.allowed ? "" : first.notice ?? "")?.[1];
    expect(code).toBeDefined();
    expect((await access.pendingRequests()).map((request) => request.code)).toEqual([code]);

    expect(await denyPairing(deps, "console:127.0.0.1", code!)).toMatchObject({ userId: "77" });
    expect(await access.pendingRequests()).toEqual([]);
    expect(await approvePairing(deps, "console:127.0.0.1", code!)).toBeUndefined();
    // Past the reminder interval, still silent: denied.
    expect(await access.check(eve, 1_000 + 11 * 60_000)).toEqual({ allowed: false });
    expect(await access.isUserAllowed("telegram", "77")).toBe(false);

    const bo = { ...eve, chatId: "78", userId: "78", userName: "Bo" };
    const second = await access.check(bo, 2_000);
    const boCode = /pairing code is ([A-Z0-9]{8})/.exec(second.allowed ? "" : second.notice ?? "")?.[1];
    expect(await approvePairing(deps, "cli:ops", boCode!)).toMatchObject({ userName: "Bo" });
    expect(await access.check(bo, 3_000)).toEqual({ allowed: true });
    expect(operatorLines(logs.lines)).toEqual([
      expect.objectContaining({ operator: "console:127.0.0.1", action: "pairing-deny", found: true, platform: "telegram", userId: "77" }),
      expect.objectContaining({ operator: "console:127.0.0.1", action: "pairing-approve", found: false }),
      expect.objectContaining({ operator: "cli:ops", action: "pairing-approve", found: true, userId: "78" }),
    ]);
  });
});
