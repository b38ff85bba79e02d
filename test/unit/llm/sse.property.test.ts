/**
 * The streamed answer is the same however the network cuts it: a valid OpenAI-style event
 * stream (text deltas with multi-byte UTF-8, tool-call pieces, a usage chunk, `[DONE]`), written
 * with CRLF, LF or CR line endings, `:` keep-alive comments, `event:` lines and data spread over
 * several `data:` lines, then cut into random byte pieces (inside UTF-8 sequences, inside lines,
 * between CR and LF), gives the ChatResult and the onText text that the generated answer says,
 * exactly as the uncut stream does. The expected result is built from the generated answer, not
 * by our code.
 */
import fc from "fast-check";
import { PROFILES } from "../../../src/llm/providers/profiles.js";
import { describe, expect, it } from "vitest";
import { readEvents, StreamedCompletion } from "../../../src/llm/completion.js";
import type { ChatResult } from "../../../src/llm/index.js";

const runs = Math.max(20, Math.round(200 * Number(process.env.PROPERTY_RUNS_SCALE ?? 1)));

const piece = fc.oneof(
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 6 }),
  fc.constantFrom("🙂", " 👩‍💻", "漢字", "かな", "données ", "\n", "data: [DONE]", "\r\n", "é"),
);

const answer = fc.record({
  deltas: fc.array(piece, { maxLength: 10 }),
  calls: fc.array(fc.record({ name: fc.constantFrom("get_weather", "now", "recall"), args: fc.json({ maxDepth: 2 }), cuts: fc.array(fc.nat(40), { maxLength: 4 }) }), { maxLength: 3 }),
  usage: fc.option(fc.record({ prompt_tokens: fc.nat(100_000), completion_tokens: fc.nat(4_000), cached: fc.nat(50_000) }), { nil: undefined }),
  model: fc.constantFrom("gpt-4o-mini-2024-07-18", "qwen2.5:7b"),
});

const format = fc.record({
  lineEnd: fc.constantFrom("\n", "\r\n", "\r"),
  comments: fc.boolean(),
  eventLines: fc.boolean(),
  multiLineData: fc.boolean(),
  spaceAfterColon: fc.boolean(),
});

type Answer = typeof answer extends fc.Arbitrary<infer T> ? T : never;
type Format = typeof format extends fc.Arbitrary<infer T> ? T : never;

/** The chunks an OpenAI-compatible server sends for `generated`, in order. */
function chunksOf(generated: Answer): unknown[] {
  const base = { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: generated.model };
  const chunks: unknown[] = [{ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] }];
  for (const delta of generated.deltas) chunks.push({ ...base, choices: [{ index: 0, delta: { content: delta }, finish_reason: null }] });
  generated.calls.forEach((call, index) => {
    const args = call.args;
    chunks.push({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index, id: `call_${index}`, type: "function", function: { name: call.name, arguments: "" } }] }, finish_reason: null }] });
    const cuts = [...new Set(call.cuts.map((cut) => cut % (args.length + 1)))].sort((a, b) => a - b);
    let from = 0;
    for (const cut of [...cuts, args.length]) {
      if (cut > from) chunks.push({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(from, cut) } }] }, finish_reason: null }] });
      from = Math.max(from, cut);
    }
  });
  chunks.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: generated.calls.length > 0 ? "tool_calls" : "stop" }] });
  if (generated.usage) {
    const { prompt_tokens, completion_tokens, cached } = generated.usage;
    chunks.push({ ...base, choices: [], usage: { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens, prompt_tokens_details: { cached_tokens: cached } } });
  }
  return chunks;
}

/** The event stream as bytes, in the given style. */
function streamOf(chunks: unknown[], style: Format): Uint8Array {
  const end = style.lineEnd;
  const field = (name: string, value: string) => `${name}:${style.spaceAfterColon ? " " : ""}${value}${end}`;
  let text = style.comments ? `: OPENROUTER PROCESSING${end}${end}` : "";
  for (const chunk of [...chunks.map((chunk) => JSON.stringify(chunk, null, style.multiLineData ? 1 : undefined)), "[DONE]"]) {
    if (style.eventLines) text += field("event", "message");
    for (const line of chunk.split("\n")) text += field("data", line);
    text += end;
    if (style.comments) text += `:${end}`;
  }
  return new TextEncoder().encode(text);
}

/** What the generated answer is, built without our code. */
function expectedResult(generated: Answer): ChatResult {
  const text = generated.deltas.join("");
  return {
    content: text === "" ? null : text,
    toolCalls: generated.calls.map((call, index) => ({ id: `call_${index}`, type: "function", function: { name: call.name, arguments: call.args.trim() === "" ? "{}" : call.args } })),
    finishReason: generated.calls.length > 0 ? "tool_calls" : "stop",
    ...(generated.usage ? { usage: { promptTokens: generated.usage.prompt_tokens, completionTokens: generated.usage.completion_tokens, cachedTokens: generated.usage.cached } } : {}),
    model: generated.model,
  };
}

async function* pieces(bytes: Uint8Array, cuts: number[]): AsyncGenerator<Uint8Array> {
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    if (cut > from) yield bytes.subarray(from, cut);
    from = Math.max(from, cut);
  }
}

async function read(bytes: Uint8Array, cuts: number[]): Promise<{ result: ChatResult; text: string }> {
  let text = "";
  const completion = new StreamedCompletion((delta) => void (text += delta), PROFILES.openai);
  await readEvents(pieces(bytes, cuts), completion);
  return { result: completion.result("configured-model"), text };
}

describe("reading a streamed answer", () => {
  it("gives the same result and onText text however the bytes are cut", async () => {
    await fc.assert(
      fc.asyncProperty(answer, format, fc.array(fc.nat(), { maxLength: 40 }), fc.boolean(), async (generated, style, rawCuts, everyByte) => {
        const bytes = streamOf(chunksOf(generated), style);
        const cuts = everyByte ? Array.from({ length: bytes.length }, (_, index) => index) : [...new Set(rawCuts.map((cut) => cut % bytes.length))].sort((a, b) => a - b);

        const whole = await read(bytes, []);
        const cut = await read(bytes, cuts);

        expect(whole.result).toEqual(expectedResult(generated));
        expect(whole.text).toBe(generated.deltas.join(""));
        expect(cut).toEqual(whole);
      }),
      { numRuns: runs },
    );
  });

  it("ignores what follows [DONE] and takes a last event that lacks its blank line", async () => {
    const chunk = (content: string) => JSON.stringify({ model: "m", choices: [{ index: 0, delta: { content }, finish_reason: null }] });
    const unterminated = new TextEncoder().encode(`data: ${chunk("a")}\n\ndata: ${chunk("b")}`);
    const afterDone = new TextEncoder().encode(`data: ${chunk("a")}\n\ndata: [DONE]\n\ndata: ${chunk("late")}\n\n`);

    expect((await read(unterminated, [])).text).toBe("ab");
    expect((await read(afterDone, [3, 40])).text).toBe("a");
  });
});
