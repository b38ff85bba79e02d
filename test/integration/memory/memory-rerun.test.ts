/**
 * A memory write lands outside the turn's commit (issue 28, Deliver 1): a turn that re-runs
 * after its memory calls must find its own earlier writes, not write again. The fake model adds
 * a fact, replaces it with a corrected one, and the step after fails once, so the whole turn is
 * retried by its job and the model, asked again, repeats both calls (with new call ids, as real
 * models do). Before the writes were keyed, the re-run's add found no fact with the old text
 * (the first run had replaced it) and saved it a second time.
 */
import { describe, expect, it } from "vitest";
import { createRedis } from "../../../src/queue/index.js";
import { MemoryStore } from "../../../src/memory/index.js";
import { httpError, startFakeLlm, textOf, type RecordedRequest } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline } from "../../helpers/pipeline.js";
import { closeAfterTest } from "../../helpers/close-after-test.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

/** The tool answers of one request (the current step's calls and their results). */
const toolAnswers = (request: RecordedRequest) => request.body.messages.filter((message) => message.role === "tool").map((message) => textOf(message.content));

describe("memory writes of a re-run turn", () => {
  it("a turn re-run after it added and replaced a fact leaves one fact, the replaced one", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    let failedOnce = false;
    llm.setHandler((request) => {
      const answers = toolAnswers(request);
      const last = answers.at(-1);
      if (last === undefined) return { toolCalls: [{ name: "memory", arguments: { action: "add", text: "likes tea" } }] };
      if (last.startsWith("Saved")) {
        const id = /\[(\w+)\]/.exec(last)?.[1] ?? "";
        return { toolCalls: [{ name: "memory", arguments: { action: "replace", id, text: "likes green tea" } }] };
      }
      if (!failedOnce) {
        failedOnce = true;
        return httpError.server(500);
      }
      return { text: "noted" };
    });
    const config = testConfig({ LLM_BASE_URL: llm.url, LLM_MAX_RETRIES: "0" });
    const adapter = new RecordingAdapter("console");
    const pipeline = closeAfterTest(await startPipeline(config, [adapter]));
    await adapter.submit(inbound({ chatId: "dm-ada", userId: "ada", chatType: "private", text: "I like tea — no, green tea" }));
    await adapter.waitFor((sent) => sent.length >= 1, 60_000);
    expect(failedOnce).toBe(true);
    // Both runs called add and replace.
    const adds = llm.requests.filter((request) => toolAnswers(request).length === 1);
    expect(adds.length).toBeGreaterThanOrEqual(2);

    const redis = createRedis(config.REDIS_URL!);
    try {
      const doc = await new MemoryStore(redis, config.REDIS_PREFIX).read({ scope: "user", platform: "console", userId: "ada" });
      expect(doc.facts.map((fact) => [fact.id, fact.text])).toEqual([["u1", "likes green tea"]]);
    } finally {
      redis.disconnect();
    }
    // The re-run was answered as the first run was: the fact (as it is now) under its id.
    expect(toolAnswers(adds.at(-1)!)).toEqual([expect.stringMatching(/^Saved \[u1\] to the user's memory .*"likes green tea"/)]);
    expect(adapter.sent.map((entry) => entry.reply.text)).toEqual(["noted"]);
  });
});
