/**
 * A sense of time (issue #11, item 3), through the real pipeline with MESSAGE_TIMESTAMPS at its
 * default (on): the model reads each user message's send time in the chat's zone, a gap of days
 * spelled out, and the stamps and the system prompt never change once sent (the cached prefix).
 * The stamp is read with the fake LLM's own pattern (`parseStamp`), and the expected wall time is
 * computed here by plain arithmetic: Asia/Tokyo is UTC+9 all year (no daylight saving time).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseStamp, startFakeLlm, systemText, textOf, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

const TOKYO_OFFSET_MS = 9 * 3_600_000;
const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const tokyo = (at: number) => {
  const wall = new Date(at + TOKYO_OFFSET_MS);
  return { weekday: WEEKDAYS[wall.getUTCDay()], date: wall.toISOString().slice(0, 10), time: wall.toISOString().slice(11, 16), zone: "Asia/Tokyo" };
};

describe("message time stamps through the pipeline (MESSAGE_TIMESTAMPS default)", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  beforeAll(async () => {
    llm = await startFakeLlm();
    pipeline = await startPipeline(testConfig({ LLM_BASE_URL: llm.url, TZ: "Asia/Tokyo" }), [adapter]);
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });

  it("stamps each message with its send time in the chat's zone, spells out a gap of days, and never rewrites what was sent", async () => {
    const first = Date.now();
    await adapter.submit(inbound({ text: "let's ship on Friday", messageId: "ts1", sentAt: first }));
    await adapter.waitFor((sent) => sent.length === 1);
    // The platform's clock says the next message came three days (and two hours) later.
    const later = first + 3 * 86_400_000 + 2 * 3_600_000;
    await adapter.submit(inbound({ text: "is it still Friday?", messageId: "ts2", sentAt: later }));
    await adapter.waitFor((sent) => sent.length === 2);

    expect(adapter.sent.map((entry) => entry.reply.text)).toEqual(["echo: let's ship on Friday", "echo: is it still Friday?"]);
    const [one, two] = llm.requests;
    const users = (request: typeof one) => request!.body.messages.filter((message) => message.role === "user").map((message) => textOf(message.content));
    expect(parseStamp(users(one)[0]!)).toEqual({ ...tokyo(first), rest: "let's ship on Friday" });
    expect(parseStamp(users(two)[1]!)).toEqual({ ...tokyo(later), gap: { amount: 3, unit: "day" }, rest: "is it still Friday?" });
    // Written once: the first message reads the same three days later, and the system prompt
    // carries no date that would change (the latest stamp tells the model today's date).
    expect(users(two)[0]).toBe(users(one)[0]);
    expect(systemText(two!)).toBe(systemText(one!));
  });
});
