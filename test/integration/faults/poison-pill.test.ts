/**
 * No poison pill (issue 28, SPEC §12 "Nothing blocks a session for good"): a model answer that
 * holds half an emoji (a lone UTF-16 surrogate) once made every delivery script fail with
 * `invalid unicode escape` — the reply never went out and every later reply of the session
 * waited behind it. Text is made well-formed where it enters, and whatever still cannot be
 * delivered is moved aside after bounded attempts, with one notice to the chat.
 */
import { describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import type { OutboundReply, SendOptions } from "../../../src/adapters/channel-adapter.js";
import { startFakeLlm, lastUserText } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { listDeadLetters } from "../../../src/session/dead-letters.js";
import { runAdmin } from "../../../src/cli/admin-commands.js";
import { closeAfterTest } from "../../helpers/close-after-test.js";

/** A platform adapter whose sends of some replies throw an error that is neither temporary nor permanent. */
class BrokenAdapter extends RecordingAdapter {
  attempts = 0;
  constructor(private readonly broken: (reply: OutboundReply) => boolean) {
    super("console");
  }
  override async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    if (this.broken(reply)) {
      this.attempts++;
      // A bug in rendering this one reply: the same error on every attempt.
      throw new TypeError("Cannot read properties of undefined (reading 'length')");
    }
    await super.send(reply, options);
  }
}

describe("no poison pill", () => {
  it("delivers an answer cut in the middle of an emoji, and the session's later answers after it", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    // The model's answer ends in a high surrogate without its low half (a stream cut mid-emoji).
    llm.setHandler((request) => ({ text: `said: ${lastUserText(request)} \ud83d` }));
    const adapter = new RecordingAdapter("console");
    const pipeline = closeAfterTest(await startPipeline(testConfig({ LLM_BASE_URL: llm.url }), [adapter]));
    // The user's own text carries a lone low surrogate too (a client that cut a paste badly).
    await adapter.submit(inbound({ text: "half \ude00 emoji", messageId: "pp1" }));
    await adapter.waitFor((sent) => sent.length === 1);
    await adapter.submit(inbound({ text: "and then", messageId: "pp2" }));
    await adapter.waitFor((sent) => sent.length === 2);
    const texts = adapter.sent.map((entry) => entry.reply.text);
    expect(texts[0]).toBe("said: half \ufffd emoji \ufffd");
    expect(texts[1]).toBe("said: and then \ufffd");
    for (const text of texts) expect(text.isWellFormed()).toBe(true);
    // What the model read back was well-formed too.
    for (const request of llm.requests) expect(JSON.stringify(request.body).includes("\\ud8")).toBe(false);
  });

  it("moves a reply that keeps failing aside after bounded attempts, tells the chat once, and delivers what is behind it", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const adapter = new BrokenAdapter((reply) => reply.text.includes("doomed"));
    const config = testConfig({ LLM_BASE_URL: llm.url, DELIVERY_MAX_ATTEMPTS: "3" });
    const pipeline = closeAfterTest(await startPipeline(config, [adapter]));
    await adapter.submit(inbound({ text: "doomed", messageId: "dl1" }));
    await adapter.waitFor(() => adapter.attempts >= 1);
    await adapter.submit(inbound({ text: "fine", messageId: "dl2" }));
    await adapter.waitFor((sent) => sent.some((entry) => entry.reply.text === "echo: fine"), 60_000);
    expect(adapter.attempts).toBe(3);
    const notices = adapter.sent.filter((entry) => entry.reply.text.includes("could not be delivered"));
    expect(notices).toHaveLength(1);
    // The notice comes before the later answer: the order of the chat is kept.
    expect(adapter.sent.findIndex((entry) => entry.reply.text.includes("could not be delivered"))).toBeLessThan(adapter.sent.findIndex((entry) => entry.reply.text === "echo: fine"));
    const redis = new Redis(config.REDIS_URL!);
    try {
      const dead = await listDeadLetters(redis, config.REDIS_PREFIX);
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({ sessionKey: "console:chat-1", kind: "reply", error: expect.stringContaining("Cannot read properties of undefined") as string });
      expect((dead[0]!.item as OutboundReply).text).toBe("echo: doomed");
      // The operator's view of it.
      let printed = "";
      const code = await runAdmin({ redis, config, now: Date.now(), write: (text) => (printed += text) }, ["dead-letters"]);
      expect(code).toBe(0);
      expect(printed).toContain("console:chat-1  reply  after 3 attempt(s): Cannot read properties of undefined");
      expect(printed).toContain('"echo: doomed"');
    } finally {
      redis.disconnect();
    }
  });
});
