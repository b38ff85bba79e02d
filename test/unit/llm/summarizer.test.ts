import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RetryableError } from "../../../src/errors.js";
import { createSummarizer } from "../../../src/llm/index.js";
import { bySystemPrompt, overflow, startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { clientFor, rejectionOf, system, user } from "./helpers.js";

let fake: FakeLlm;
beforeEach(async () => {
  fake = await startFakeLlm();
});
afterEach(async () => {
  await fake.close();
});

const prompt = [system("You summarize conversations."), user("Summarize: the user wants a trip to Lima on 2026-03-02.")];

describe("createSummarizer", () => {
  it("returns the model's text and usage, sending maxTokens", async () => {
    fake.route(bySystemPrompt(/summar/i), () => ({ text: "## Goal\nTrip to Lima on 2026-03-02", usage: { prompt_tokens: 40, completion_tokens: 9 } }));
    const summarizer = createSummarizer(clientFor(fake, { model: "gpt-4o-mini", maxOutputTokens: 4096 }));

    const summary = await summarizer.summarize({ messages: prompt, maxTokens: 2000 });

    expect(summary).toEqual({ text: "## Goal\nTrip to Lima on 2026-03-02", finishReason: "stop", usage: { promptTokens: 40, completionTokens: 9, cachedTokens: 0 } });
    expect(fake.requests[0]?.body.max_tokens).toBe(2000);
    expect(fake.requests[0]?.body).not.toHaveProperty("tools");
    expect(summarizer.model).toBe("gpt-4o-mini");
  });

  it("drops inline thinking of reasoning models", async () => {
    fake.enqueue({ text: "<think>\nLet me see...\n</think>\n\n## Goal\nTrip" });
    const summary = await createSummarizer(clientFor(fake)).summarize({ messages: prompt, maxTokens: 500 });
    expect(summary.text).toBe("## Goal\nTrip");
  });

  it("treats an empty answer as a retryable failure", async () => {
    fake.enqueue({ text: "", finishReason: "stop" });
    const error = await rejectionOf(createSummarizer(clientFor(fake)).summarize({ messages: prompt, maxTokens: 500 }));
    expect(error).toBeInstanceOf(RetryableError);
    expect(error.message).toContain("finish_reason stop");
  });

  it("passes a stop at max_tokens back as finish_reason length, the cut thinking of a reasoning model removed", async () => {
    // A reasoning model that spent max_tokens thinking: the content is an unclosed <think>.
    fake.enqueue({ text: "<think>\nThe user wants a trip. Let me list every", finishReason: "length" });
    const cutThinking = await createSummarizer(clientFor(fake)).summarize({ messages: prompt, maxTokens: 500 });
    expect(cutThinking).toMatchObject({ text: "", finishReason: "length" });

    fake.enqueue({ text: "## Pending User Requests\nTrip to Li", finishReason: "length" });
    const cutAnswer = await createSummarizer(clientFor(fake)).summarize({ messages: prompt, maxTokens: 500 });
    expect(cutAnswer).toMatchObject({ text: "## Pending User Requests\nTrip to Li", finishReason: "length" });
  });

  it("reports its client's window, including one learned from an overflow", async () => {
    const summarizer = createSummarizer(clientFor(fake, { model: "llama3.1:8b" }));
    expect(summarizer.contextWindow).toBe(131_072);
    fake.enqueue(overflow.llamaCpp({ contextWindow: 8192 }));

    await rejectionOf(summarizer.summarize({ messages: prompt, maxTokens: 500 }));

    expect(summarizer.contextWindow).toBe(8192);
  });
});
