/**
 * The compaction threshold at its edges (issue #31 review): the session's context manager driven
 * turn by turn, with a fixed overhead (tools + system prompt) up to 85% of the window, or a
 * max_tokens over half of it. What must hold: every request leaves the reply's room in the
 * window, and a compaction is not paid on every step because the threshold sits above what a
 * request may carry. The provider counts as the engine does (chars / 4), so the figures are the
 * engine's own decisions, not calibration.
 */
import { describe, expect, it } from "vitest";
import { createContextManager } from "../../../src/session-context/session-context.js";
import type { ChatMessage, CompactionRecord, Summarizer, ToolDefinition } from "../../../src/context/index.js";
import type { Logger } from "../../../src/logger.js";
import { messageIdAllocator, newSessionState } from "../../../src/session/state.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

const counter = createTokenCounter("chars/4", (text) => Math.ceil(text.length / 4));
const text = (letter: string, tokens: number) => letter.repeat(tokens * 4);

/** Writes 1.4 × the length asked for: over it, within what the engine accepts (1.5 ×). */
function summarizer(calls: { count: number }): Summarizer {
  return {
    model: "aux",
    contextWindow: 200_000,
    async summarize(request) {
      calls.count += 1;
      const prompt = request.messages.map((message) => (typeof message.content === "string" ? message.content : "")).join("\n");
      const asked = Number(/about (\d+) tokens/.exec(prompt)?.[1] ?? 400);
      return { text: `## Goal\n${text("x", Math.floor(asked * 1.4))}` };
    },
  };
}

function recordingLogger(records: CompactionRecord[]): Logger {
  const logger = {
    info: (object: { compaction?: CompactionRecord }) => void (object?.compaction && records.push(object.compaction)),
    warn: () => undefined, debug: () => undefined, error: () => undefined, child: () => logger,
  };
  return logger as unknown as Logger;
}

interface Session {
  window: number;
  /** Tokens of tool definitions; the system prompt adds 400. */
  toolTokens: number;
  replyTokens?: number;
  turns: number;
}

/** `turns` turns of a user message (1% of the window) and an answer (1/60 of it): hygiene, one step, the answer. */
async function run(session: Session) {
  const { window } = session;
  const calls = { count: 0 };
  const tools: ToolDefinition[] = [{ type: "function", function: { name: "reference", description: text("d", session.toolTokens), parameters: { type: "object" } } }];
  const manager = createContextManager({
    llm: { model: "m", contextWindow: window, complete: () => Promise.reject(new Error("unused")) },
    summarizer: summarizer(calls),
    settings: { hygieneThreshold: 0.85, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20, ...(session.replyTokens ? { replyTokens: session.replyTokens } : {}) },
    tools: () => tools,
    counter,
    retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 1_000 },
  });
  const state = newSessionState(0);
  const records: CompactionRecord[] = [];
  const log = recordingLogger(records);
  // What the reply needs: its max_tokens, or the default reserve (10% of the window, at most 8,192).
  const replyRoom = Math.max(session.replyTokens ?? 0, Math.min(8_192, Math.floor(window * 0.1)));
  let context: ChatMessage[] = [{ id: "s0", role: "system", content: text("s", 400) }];
  let overWindow = 0;
  for (let turn = 0; turn < session.turns; turn++) {
    const newId = messageIdAllocator(state);
    const scope = { signal: new AbortController().signal, log, newId, addToTranscript: () => undefined, tools };
    context = [...context, { id: newId(), role: "user", content: `t${turn} ${text("u", Math.floor(window / 100))}` }];
    context = (await manager.hygiene(state, context, scope)).context;
    context = await manager.beforeStep(state, context, scope);
    const sent = manager.prepareRequest(state, context).messages;
    const request = 3 + Math.ceil(JSON.stringify(tools).length / 4) +
      sent.reduce((sum, message) => sum + 4 + (typeof message.content === "string" ? Math.ceil(message.content.length / 4) : 0), 0);
    if (request + replyRoom > window) overWindow++;
    context = [...context, { id: newId(), role: "assistant", content: text("a", Math.floor(window / 60)) }];
  }
  return { compactions: records.length, summarizerCalls: calls.count, overWindow, thresholds: records.map((record) => record.thresholdTokens) };
}

describe("the compaction threshold at its edges", () => {
  it("a max_tokens over half the window: the threshold is the hard limit, and a compaction is not paid every step", async () => {
    // 32K, 30% fixed, max_tokens 16,384: hard limit 32,000 − 16,384 − 1,600 = 14,016. The threshold
    // stayed at 16,000, every compaction ended over 14,016 and ran again at the next step: 230
    // compactions and 116 summaries in 120 turns. Now 39 and 39.
    const large = await run({ window: 32_000, toolTokens: 9_000, replyTokens: 16_384, turns: 120 });
    expect(Math.max(...large.thresholds)).toBe(14_016);
    expect(large.compactions).toBeLessThanOrEqual(60);
    expect(large.summarizerCalls).toBeLessThanOrEqual(60);
    expect(large.overWindow).toBe(0);
    // 8K, max_tokens 4,096 (a local model's usual setting): 113 before, 31 now.
    const local = await run({ window: 8_192, toolTokens: 1_500, replyTokens: 4_096, turns: 120 });
    expect(local.compactions).toBeLessThanOrEqual(60);
    expect(local.overWindow).toBe(0);
  });

  it("fixed overhead at 80% and 85% of the window: every request still leaves the reply's room", async () => {
    // Before: from the 2nd–4th turn on, every request ate into the reply's room (116–118 of 120
    // turns); the tail's floor (a quarter of the threshold's) and the summary's (a quarter window's)
    // did not fit above the overhead under the hard limit.
    for (const window of [8_192, 32_000]) {
      for (const share of [0.8, 0.85]) {
        const result = await run({ window, toolTokens: Math.floor(window * share) - 500, turns: 120 });
        expect(result.compactions, `${window} × ${share}`).toBeGreaterThan(0);
        expect(result.overWindow, `${window} × ${share}`).toBe(0);
      }
    }
  });
});
