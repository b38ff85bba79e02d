/**
 * The reservation before a call (budget/scope.ts estimateCost) is deliberately high for text,
 * but a picture is reserved at what a server charges for one, not at the length of its base64.
 */
import { describe, expect, it } from "vitest";
import { estimateCost } from "../../../src/budget/index.js";
import type { ChatRequest } from "../../../src/core/llm.js";

const prices = { input: 1, cachedInput: 0.5, output: 2 };
const picture = `data:image/jpeg;base64,${Buffer.alloc(1_500_000, 7).toString("base64")}`;

describe("estimateCost", () => {
  it("reserves at most OpenAI's largest charge for a picture (1,445 tokens at high detail), not its 2 MB data URL", () => {
    const request: ChatRequest = {
      messages: [
        { role: "system", content: "You are longhaul." },
        { role: "user", content: [{ type: "text", text: "what is in this picture?" }, { type: "image_url", image_url: { url: picture, detail: "high" } }] },
      ],
      maxTokens: 1_000,
    };
    const estimate = estimateCost(request, prices, 4_096);
    expect(estimate.tokens).toBeGreaterThan(1_445 + 1_000);
    expect(estimate.tokens).toBeLessThan(3_000);
  });

  it("stays above a third of the request's JSON for text, tool calls and tools (about 3 characters a token)", () => {
    const text = "line with \"quotes\", a path C:\\tmp and ünïcödé\n".repeat(400);
    const request: ChatRequest = {
      messages: [
        { role: "system", content: "You are longhaul." },
        { role: "user", content: text },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: "/etc/hosts", lines: 400 }) } }] },
        { role: "tool", tool_call_id: "call_1", content: text },
      ],
      tools: [{ type: "function", function: { name: "read_file", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } } } } }],
      maxTokens: 500,
    };
    const json = JSON.stringify(request.messages).length + JSON.stringify(request.tools).length;
    const estimate = estimateCost(request, prices, 4_096);
    // Escapes (\n, \", \\) make the JSON longer than the text the model reads: within 10% of it.
    expect(estimate.tokens - 500).toBeGreaterThanOrEqual(Math.floor((0.9 * json) / 3));
    expect(estimate.usd).toBeCloseTo(((estimate.tokens - 500) * prices.input + 500 * prices.output) / 1_000_000, 9);
  });
});
