/** The summarizer fake is at least as strict as a real server about its window. */
import { describe, expect, it } from "vitest";
import { ContextOverflowError } from "../../../src/errors.js";
import type { RecordedRequest } from "../../fakes/fake-llm.js";
import { FakeSummarizer, summarizerHandler } from "../../fakes/fake-summarizer.js";
import { asClientError } from "../../helpers/summarizer-client.js";

// 3.3 characters per token (the fake's own unit): 3,300 characters are 1,000 of its tokens.
const turns = (chars: number) => `<turns>\n[m1] ${"x".repeat(chars)}\n</turns>`;

describe("FakeSummarizer's window", () => {
  it("refuses a prompt that with max_tokens exceeds its window, as a server's 400 reaches the engine", async () => {
    const fake = new FakeSummarizer({ contextWindow: 1_000, defaultTargetTokens: 100, refused: asClientError });
    const request = (chars: number, maxTokens: number) => fake.summarize({ messages: [{ role: "system", content: "Summarize." }, { role: "user", content: turns(chars) }], maxTokens });
    await expect(request(2_000, 200)).resolves.toMatchObject({ finishReason: "stop" });
    await expect(request(2_000, 500)).rejects.toBeInstanceOf(ContextOverflowError);
    await expect(request(4_000, 1)).rejects.toThrow(/maximum context length is 1000 tokens/);
    // A refused request is not answered: only the first one reached the model.
    expect(fake.calls).toHaveLength(1);
  });

  it("behind the HTTP fake, answers OpenAI's context_length_exceeded 400", () => {
    const handler = summarizerHandler({ contextWindow: 1_000, defaultTargetTokens: 100 });
    const request = (chars: number): RecordedRequest => ({ index: 0, at: 0, connection: 1, url: "/v1/chat/completions", headers: {}, body: { model: "m", max_tokens: 200, messages: [{ role: "system", content: "Summarize." }, { role: "user", content: turns(chars) }] } });
    expect(handler(request(2_000))).toMatchObject({ finishReason: "stop" });
    expect(handler(request(4_000))).toMatchObject({ status: 400, body: { error: { code: "context_length_exceeded" } } });
  });
});
