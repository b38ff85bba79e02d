/**
 * Properties over histories a real session can end up with (issue #11, item 7): tool results
 * missing, duplicated or out of place, and summarizers with small windows that fold the middle in
 * chunks. The history is repaired as the tool loop repairs it before every request; then every
 * compaction must show the summarizer each folded message exactly once, in order (a fold that
 * silently skips one, such as `middle: toFold.slice(1)`, fails here).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sanitizeToolPairs } from "../../../src/context/assemble.js";
import { compact } from "../../../src/context/compact.js";
import type { ChatMessage, ToolCall } from "../../../src/core/messages.js";
import { createTokenCounter } from "../../../src/context/tokens.js";
import { propertyRuns } from "../../helpers/property-runs.js";
import { FakeSummarizer } from "../../fakes/fake-summarizer.js";
import { asClientError } from "../../helpers/summarizer-client.js";
import { expectToolPairs } from "../../helpers/tool-pairs.js";

const counter = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));

type Damage = "none" | "missing" | "duplicate" | "late" | "early";
interface StepSpec { outputs: number[]; damage: Damage }
interface TurnSpec { userChars: number; steps: StepSpec[]; reply: boolean }

const stepSpec: fc.Arbitrary<StepSpec> = fc.record({
  outputs: fc.array(fc.integer({ min: 5, max: 6_000 }), { minLength: 1, maxLength: 3 }),
  damage: fc.constantFrom<Damage>("none", "none", "none", "missing", "duplicate", "late", "early"),
});
const sessionSpec = fc.record({
  summarizerWindow: fc.constantFrom(3_000, 4_000, 8_000, 128_000),
  reasoningTokens: fc.constantFrom(0, 0, 300),
  turns: fc.array(fc.record({ userChars: fc.integer({ min: 1, max: 800 }), steps: fc.array(stepSpec, { maxLength: 3 }), reply: fc.boolean() }), { minLength: 6, maxLength: 20 }),
});

const filler = (label: string, chars: number) => `${label} ${"lorem ipsum 42 ü🎉 ".repeat(Math.ceil(chars / 18))}`.slice(0, chars);

function buildHistory(turns: TurnSpec[]): { messages: ChatMessage[]; newId: () => string } {
  let seq = 0;
  let callSeq = 0;
  const newId = () => `m${++seq}`;
  const messages: ChatMessage[] = [{ id: newId(), role: "system", content: "You are longhaul." }];
  let late: ChatMessage[] = [];
  for (const turn of turns) {
    messages.push({ id: newId(), role: "user", content: filler("user", turn.userChars) }, ...late);
    late = [];
    for (const step of turn.steps) {
      const calls: ToolCall[] = step.outputs.map(() => ({ id: `call_${++callSeq}`, type: "function", function: { name: "read_file", arguments: `{"n":${callSeq}}` } }));
      const results: ChatMessage[] = step.outputs.map((size, index) => ({ id: newId(), role: "tool", tool_call_id: calls[index]!.id, content: filler("output", size) }));
      const assistant: ChatMessage = { id: newId(), role: "assistant", content: null, tool_calls: calls };
      switch (step.damage) {
        case "missing": messages.push(assistant, ...results.slice(1)); break;
        case "duplicate": messages.push(assistant, ...results, { ...results[0]!, id: newId() }); break;
        case "late": messages.push(assistant, ...results.slice(1)); late = results.slice(0, 1); break; // after the next user message
        case "early": messages.push(...results.slice(0, 1), assistant, ...results.slice(1)); break;
        default: messages.push(assistant, ...results);
      }
    }
    if (turn.reply) messages.push({ id: newId(), role: "assistant", content: filler("reply", 300) });
  }
  return { messages, newId };
}

describe("folds over damaged histories and small summarizer windows", () => {
  it("repairs every history, and the summarizer sees every folded message exactly once, in order", async () => {
    let chunked = 0;
    let compactions = 0;
    await fc.assert(
      fc.asyncProperty(sessionSpec, async (spec) => {
        const { messages, newId } = buildHistory(spec.turns);
        const repaired = sanitizeToolPairs(messages, newId).messages;
        expectToolPairs(repaired);
        const summarizer = new FakeSummarizer({ contextWindow: spec.summarizerWindow, reasoningTokens: spec.reasoningTokens, refused: asClientError });
        const result = await compact({
          messages: repaired,
          settings: { contextWindow: 16_000, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 6 },
          reason: "manual",
          summarizer,
          fallbackSummarizer: new FakeSummarizer({ model: "main" }),
          counter,
          newId,
          retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 10_000 },
        });
        expectToolPairs(result.messages);
        if (result.status !== "compacted" || result.record.summarizerModel === null) return;
        compactions += 1;
        const writer = result.record.summarizerModel === "main" ? null : summarizer;
        if (writer === null) return;
        if (writer.calls.length > 1) chunked += 1;
        const kept = new Set(result.messages.map((message) => message.id));
        const folded = repaired.filter((message) => !kept.has(message.id) && message.kind !== "summary").map((message) => message.id);
        const sent = writer.calls.flatMap((call) => call.turnIds);
        expect(sent).toEqual(folded);
        // The chunks chain: each later one carries the running summary, listing what came before.
        writer.calls.slice(1).forEach((call, index) => expect(call.user).toContain(`[${writer.calls[index]!.turnIds.at(-1)}]`));
      }),
      { numRuns: propertyRuns(60), endOnFailure: true },
    );
    expect(compactions).toBeGreaterThan(propertyRuns(60) / 3);
    expect(chunked).toBeGreaterThan(propertyRuns(60) / 20);
  }, 300_000);
});
