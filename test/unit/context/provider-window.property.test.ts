/**
 * Issue #11, item 7: random sessions through the real engine (the session's context manager, the
 * tool loop, the openai client, the summarizer client) against the fake LLM as a provider whose
 * tokenizer differs from ours (`tokenRatio` 0.8, 1.0 or 1.3 on its own chars/4 count), with its
 * window enforced (prompt + max_tokens, 8K–128K) and one kind of server's request rules (OpenAI's,
 * Anthropic's, vLLM's, Ollama's, Gemini's, DeepSeek's or Mistral's dialect, the client told which). The
 * sessions have long tool outputs, group speakers, time stamps, multi-day gaps, a max-steps limit,
 * and a summarizer (the same fake) that sometimes stops at `length` or fails.
 *
 * Properties: no request the fake receives is over its window (main or summarizer), no turn
 * fails, and every request is valid under OpenAI's and Anthropic's rules and ends, for the main
 * model, with a user message or tool results.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createContextManager } from "../../../src/session-context/session-context.js";
import { runTurn } from "../../../src/agent/run-turn.js";
import { stampFor, toUserMessages } from "../../../src/agent/user-messages.js";
import type { ChatMessage } from "../../../src/core/messages.js";
import { createLlmClient } from "../../../src/llm/client.js";
import { createSummarizer } from "../../../src/llm/summarizer.js";
import type { Logger } from "../../../src/logger.js";
import { messageIdAllocator, newSessionState } from "../../../src/session/state.js";
import type { InboxEntry } from "../../../src/session/store.js";
import { outputCapChars, ToolRegistry } from "../../../src/tools/index.js";
import { httpError, startFakeLlm, textOf, type FakeResponse, type RecordedRequest } from "../../fakes/fake-llm.js";
import { summarizerHandler } from "../../fakes/fake-summarizer.js";
import { checkProviderRules, PROVIDER_FOR_RULES, type ProviderRules } from "../../fakes/provider-rules.js";
import { propertyRuns } from "../../helpers/property-runs.js";
import { isSummarizerRequest } from "../../helpers/agent-fixtures.js";

type SummaryBehaviour = "ok" | "length" | "fail" | "reasoning";

interface TurnSpec {
  /** Hours since the previous turn (multi-day gaps included). */
  gapHours: number;
  speakers: string[];
  userChars: number;
  /** Tool steps the model wants; each with 1–2 parallel calls and their output sizes (share of the window × 4 chars). */
  steps: number[][];
  answerChars: number;
}

const turnSpec: fc.Arbitrary<TurnSpec> = fc.record({
  gapHours: fc.constantFrom(0, 0, 1, 5, 30, 75),
  speakers: fc.array(fc.constantFrom("Alice", "Bob", "Chen"), { minLength: 1, maxLength: 2 }),
  userChars: fc.integer({ min: 5, max: 3_000 }),
  steps: fc.array(fc.array(fc.double({ min: 0.002, max: 0.3, noNaN: true }), { minLength: 1, maxLength: 2 }), { maxLength: 5 }),
  answerChars: fc.integer({ min: 10, max: 2_000 }),
});

const sessionSpec = fc.record({
  ratio: fc.constantFrom(1.0, 1.3, 0.8),
  window: fc.oneof(fc.integer({ min: 8_000, max: 128_000 }), fc.constantFrom(8_192, 16_384, 32_768)),
  rules: fc.constantFrom<ProviderRules>("openai", "anthropic", "vllm", "ollama", "gemini", "deepseek", "mistral"),
  group: fc.boolean(),
  maxSteps: fc.constantFrom(2, 3, 12),
  maxOutputTokens: fc.constantFrom(512, 1_024, 4_096),
  summaries: fc.array(fc.constantFrom<SummaryBehaviour>("ok", "ok", "ok", "length", "fail", "reasoning"), { minLength: 1, maxLength: 8 }),
  turns: fc.array(turnSpec, { minLength: 2, maxLength: 14 }),
});
type SessionSpec = typeof sessionSpec extends fc.Arbitrary<infer T> ? T : never;

/** Text whose o200k count differs from the fake's chars/4: words, numbers, punctuation. */
const filler = (label: string, chars: number) =>
  `${label} ${Array.from({ length: Math.ceil(chars / 24) }, (_, index) => `v${(index * 7919) % 10_007}=ok; `).join("")}`.slice(0, chars);

const logger = (() => {
  const log = { info: () => undefined, warn: () => undefined, debug: () => undefined, error: () => undefined, child: () => log };
  return log as unknown as Logger;
})();

const START = Date.UTC(2026, 10, 27, 8, 0);

async function runSession(spec: SessionSpec): Promise<{ requests: RecordedRequest[]; failures: unknown[] }> {
  const requests: RecordedRequest[] = [];
  const failures: unknown[] = [];
  // One fake per session: its ratio, window and rules are the session's provider.
  const llm = await startFakeLlm({ tokenRatio: spec.ratio, contextWindow: spec.window, rules: spec.rules });
  try {
    let summaryCalls = 0;
    const writers = {
      ok: summarizerHandler(),
      length: summarizerHandler({ fixedLengthTokens: 200_000 }),
      reasoning: summarizerHandler({ reasoningTokens: 1_500 }),
    };
    llm.route(isSummarizerRequest, async (request): Promise<FakeResponse> => {
      const behaviour = spec.summaries[summaryCalls++ % spec.summaries.length]!;
      return behaviour === "fail" ? httpError.server(503) : writers[behaviour](request);
    });
    let turnIndex = 0;
    let stepInTurn = 0;
    llm.setHandler((request): FakeResponse => {
      const turn = spec.turns[turnIndex]!;
      const step = stepInTurn++;
      if (request.body.tool_choice === "none" || step >= turn.steps.length) return { text: filler(`answer ${turnIndex}`, turn.answerChars) };
      return { text: null, toolCalls: turn.steps[step]!.map((share, call) => ({ id: `c${turnIndex}_${step}_${call}`, name: "read_log", arguments: { chars: Math.floor(share * spec.window * 4) } })) };
    });

    // The operator names the fake's dialect (LLM_PROVIDER); the summarizer speaks it too.
    const provider = PROVIDER_FOR_RULES[spec.rules];
    const main = createLlmClient({ baseUrl: llm.url, model: "gpt-4o-mini", contextWindow: spec.window, timeoutMs: 20_000, maxRetries: 0, provider });
    const summaryClient = createLlmClient({ baseUrl: llm.url, model: "fake-summarizer", contextWindow: spec.window, timeoutMs: 20_000, maxRetries: 0, provider });
    const tools = new ToolRegistry();
    tools.register({
      definition: { type: "function", function: { name: "read_log", description: "Read a log.", parameters: { type: "object", properties: { chars: { type: "integer" } } } } },
      run: async (args) => filler("log", Number((args as { chars?: number }).chars ?? 100)),
    });
    const manager = createContextManager({
      llm: main,
      summarizer: createSummarizer(summaryClient),
      settings: { hygieneThreshold: 0.85, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20, replyTokens: spec.maxOutputTokens },
      tools: () => tools.definitions(),
      retry: { attempts: 2, baseDelayMs: 0, timeoutMs: 20_000 },
    });
    const state = newSessionState(START);
    const newId = messageIdAllocator(state);
    state.live = [{ id: newId(), role: "system", content: "You are longhaul, a careful assistant.", at: START }];
    const definitions = tools.definitions();
    let now = START;
    for (const turn of spec.turns) {
      stepInTurn = 0;
      now += turn.gapHours * 3_600_000 + 60_000;
      const entries = turn.speakers.map((speaker, index) => ({
        text: filler(`${speaker} asks`, turn.userChars), sentAt: now + index * 1_000, messageId: `t${turnIndex}_${index}`, userId: speaker, userName: speaker,
        chatId: "c1", chatType: spec.group ? "group" : "private", platform: "telegram",
      }) as InboxEntry);
      const stamp = stampFor({ messageTimeStamps: true, timeZone: "Europe/Berlin" }, state);
      let context: ChatMessage[] = [...state.live, ...toUserMessages(entries, newId, stamp)];
      const scope = { signal: new AbortController().signal, log: logger, newId, addToTranscript: () => undefined, tools: definitions, timeZone: "Europe/Berlin" };
      try {
        context = (await manager.hygiene(state, context, scope)).context;
        const result = await runTurn({
          llm: main,
          context,
          tools,
          toolContext: { sessionKey: "s", signal: scope.signal, transcript: { get: async () => undefined, search: async () => ({ messages: [], scanned: 0, continueBefore: undefined }) }, outputs: { read: async () => undefined }, now: () => now },
          maxSteps: spec.maxSteps,
          outputCap: (tool) => outputCapChars({ configured: 50_000, contextWindow: manager.contextWindow(state), perTool: tool?.maxOutputChars }),
          toolOutputs: { save: async () => undefined },
          maxOutputTokens: spec.maxOutputTokens,
          newId,
          signal: scope.signal,
          now: () => now,
          prepareRequest: (current) => manager.prepareRequest(state, current),
          beforeStep: (current) => manager.beforeStep(state, current, scope),
          onOverflow: (current, error) => manager.onOverflow(state, current, error, scope),
          onStepFinished: (result, _step, sent) => manager.recordStep(state, sent, result, logger, definitions),
        });
        state.live = result.context;
      } catch (error) {
        failures.push(error);
        break;
      }
      turnIndex++;
    }
    requests.push(...llm.requests);
    if (process.env.PROPERTY_STATS) {
      const fill = Math.max(...llm.requests.map((request) => (llm.promptTokens(request) + Number(request.body.max_tokens ?? 0)) / spec.window));
      process.stderr.write(`ratio ${spec.ratio} window ${spec.window} rules ${spec.rules} requests ${llm.requests.length} summaries ${summaryCalls} fill ${fill.toFixed(2)} failures ${failures.length}\n`);
      for (const request of llm.requests) {
        const problem = checkProviderRules("anthropic", request.body) ?? checkProviderRules("openai", request.body);
        if (problem) process.stderr.write(`  invalid: #${request.index} ${isSummarizerRequest(request) ? "summarizer" : "main"} ${JSON.stringify(problem.body)} roles ${request.body.messages.map((message) => `${message.role}${message.tool_calls ? "+calls" : ""}:${textOf(message.content).slice(0, 30).replaceAll("\n", " ")}`).join(" | ")}\n`);
      }
      for (const index of llm.overWindow) {
        const request = llm.requests[index]!;
        for (const earlier of llm.requests.slice(Math.max(0, index - 6), index)) process.stderr.write(`    #${earlier.index} ${isSummarizerRequest(earlier) ? "summarizer" : "main"} prompt ${llm.promptTokens(earlier)} max ${String(earlier.body.max_tokens)} msgs ${earlier.body.messages.length} choice ${String(earlier.body.tool_choice)}\n`);
        process.stderr.write(`  over: #${index} ${isSummarizerRequest(request) ? "summarizer" : "main"} prompt ${llm.promptTokens(request)} max_tokens ${String(request.body.max_tokens)} messages ${request.body.messages.length}\n`);
      }
    }
    expect(llm.overWindow).toEqual([]);
    // Ollama refuses nothing: over its num_ctx it silently drops the oldest messages instead.
    expect(llm.truncated).toEqual([]);
    return { requests, failures };
  } finally {
    await llm.close();
  }
}

describe("the engine against a provider with its own tokens, window and rules (property)", () => {
  it("sends no request over the window, and every request is valid for every provider and ends where the provider expects", async () => {
    await fc.assert(
      fc.asyncProperty(sessionSpec, async (spec) => {
        const { requests, failures } = await runSession(spec);
        expect(failures).toEqual([]);
        for (const request of requests) {
          expect(checkProviderRules(spec.rules, request.body)).toBeUndefined();
          expect(checkProviderRules("openai", request.body)).toBeUndefined();
          expect(checkProviderRules("anthropic", request.body)).toBeUndefined();
          if (isSummarizerRequest(request)) continue;
          const last = request.body.messages.at(-1)!;
          expect(["user", "tool"]).toContain(last.role);
          // The turn's latest user message is never folded away: its stamp is in the request.
          expect(request.body.messages.some((message) => message.role === "user" && /^\[\w{3} \d{4}-\d{2}-\d{2} \d{2}:\d{2} Europe\/Berlin/.test(textOf(message.content)))).toBe(true);
        }
      }),
      { numRuns: propertyRuns(25), endOnFailure: true, ...(process.env.PROPERTY_SEED ? { seed: Number(process.env.PROPERTY_SEED), path: process.env.PROPERTY_PATH } : {}) },
    );
  }, 900_000);
});
