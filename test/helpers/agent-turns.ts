/**
 * Real turns without Redis or a model server (`runTurnSegments` with the session's context
 * manager): a scripted LLM, an engine over a given tool catalogue, inbox entries and a fresh
 * session state. Used by the agent room's unit tests of whole turns.
 */
import { runTurnSegments, type TurnEngine } from "../../src/agent/index.js";
import { createTokenCounter } from "../../src/context/index.js";
import type { ChatRequest, ChatResult, LlmClient } from "../../src/core/llm.js";
import { silentLogger } from "../../src/logger.js";
import { createContextManager, type ContextManagerOptions } from "../../src/session-context/session-context.js";
import { newSessionState, type SessionState } from "../../src/session/state.js";
import type { InboxEntry } from "../../src/session/store.js";
import type { ToolCatalog } from "../../src/tools/index.js";
import { inbound } from "./recording-adapter.js";

export const SYSTEM_PROMPT = "You are a careful assistant.";

export type Step = Pick<ChatResult, "content" | "toolCalls">;

/** A model that answers each request with what `respond` says (scripted per request). */
export function respondingLlm(respond: (request: ChatRequest, index: number) => Step | Promise<Step>, model = "gpt-4o-mini"): LlmClient & { requests: ChatRequest[] } {
  const requests: ChatRequest[] = [];
  return {
    model,
    contextWindow: 128_000,
    requests,
    async complete(request: ChatRequest): Promise<ChatResult> {
      requests.push(request);
      const step = await respond(request, requests.length - 1);
      return { ...step, finishReason: step.toolCalls.length > 0 ? "tool_calls" : "stop", model, usage: { promptTokens: 100, completionTokens: 10, cachedTokens: 0 } };
    },
  };
}

/** Answers each request with the next scripted step (the last one repeats). */
export const scriptedLlm = (steps: Step[], model = "gpt-4o-mini") => respondingLlm((_request, index) => steps[Math.min(index, steps.length - 1)]!, model);

export function contextFor(llm: LlmClient, tools: ToolCatalog, hooks?: ContextManagerOptions["hooks"]) {
  return createContextManager({
    llm,
    summarizer: { model: "unused", contextWindow: 128_000, summarize: () => Promise.reject(new Error("no compaction expected")) },
    settings: { hygieneThreshold: 0.85, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20, replyTokens: 512 },
    tools: () => tools.builtinDefinitions(),
    retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 1_000 },
    counter: createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4)),
    ...(hooks ? { hooks } : {}),
  });
}

/** An engine over `tools` with small, fixed settings; `extra` overrides any port. */
export function engineOver(llm: LlmClient, tools: ToolCatalog, extra: Partial<TurnEngine> = {}, admins: readonly string[] = []): TurnEngine {
  return {
    llm, tools,
    context: contextFor(llm, tools),
    systemPrompt: SYSTEM_PROMPT,
    maxSteps: 4,
    maxOutputTokens: 512,
    toolOutputMaxChars: 16_000,
    toolOutputs: { save: async () => undefined, read: async () => undefined },
    approval: { timeoutMs: 300_000, admins: { telegram: admins } },
    prices: { input: 0, cachedInput: 0, output: 0 },
    idleResetMs: 0,
    messageTimeStamps: false,
    transcriptReader: () => ({ get: async () => undefined, search: async () => ({ messages: [], scanned: 0, continueBefore: undefined }) }),
    transcriptLength: async () => 0,
    now: () => 1_000_000,
    timeZone: "UTC",
    ...extra,
  } as TurnEngine;
}

/** A Telegram message as the inbox holds it (a chat id starting with "-" is a group). */
export const say = (chatId: string, userId: string, userName: string, text: string, messageId: string): InboxEntry => ({
  ...inbound({ platform: "telegram", chatId, sessionKey: `tg:${chatId}`, chatType: chatId.startsWith("-") ? "group" : "private", userId, userName, text, messageId }),
  receivedAt: 0,
});

export const freshState = (): SessionState => {
  const state = newSessionState(0, 3);
  state.engine.systemPromptBase = SYSTEM_PROMPT;
  return state;
};

/** One turn answering `batch` (all from one chat). */
export const turn = (engine: TurnEngine, batch: InboxEntry[], state = freshState(), signal = new AbortController().signal) => {
  const chatId = batch[0]!.chatId;
  return runTurnSegments(engine, { sessionKey: `tg:${chatId}`, state, batch, target: { platform: "telegram", chatId }, signal, log: silentLogger });
};
