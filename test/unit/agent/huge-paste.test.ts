/**
 * Issue #31 item 1 through a real turn (`runTurnSegments` with the session's context manager,
 * the recall tool and the paste joiner): a paste three times the window, sent as Telegram parts,
 * is answered; the model sees its head and tail with the recall id, the transcript keeps it
 * whole, the user is told once, and `recall` reads the middle back. A turn whose model fails
 * after a compaction it paid for keeps that compaction.
 */
import { describe, expect, it } from "vitest";
import { BatchFailedError, runTurnSegments, settleWithoutAnswer, type TurnEngine } from "../../../src/agent/index.js";
import { createContextManager } from "../../../src/session-context/session-context.js";
import { createTokenCounter, extractRecallId, type ChatMessage, type Summarizer } from "../../../src/context/index.js";
import type { ChatRequest, ChatResult, LlmClient } from "../../../src/core/llm.js";
import { PermanentError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/logger.js";
import { newSessionState, type SessionState } from "../../../src/session/state.js";
import type { InboxEntry } from "../../../src/session/store.js";
import { createRecallTool, ToolCatalog } from "../../../src/tools/index.js";
import { inbound } from "../../helpers/recording-adapter.js";

const WINDOW = 8_192;
const SYSTEM_PROMPT = "You are a careful assistant.";
/** The model's own count of a request: characters / 3.5 over the JSON it receives (not the engine's counter). */
const providerTokens = (request: ChatRequest) => Math.ceil(JSON.stringify(request.messages).length / 3.5 + JSON.stringify(request.tools ?? []).length / 3.5);

type Step = Pick<ChatResult, "content" | "toolCalls"> | Error;

/** A model that refuses a prompt over its window, as a provider does, and answers each request with the next step. */
function scriptedLlm(steps: Step[]): LlmClient & { requests: ChatRequest[] } {
  let next = 0;
  return {
    model: "gpt-4o-mini",
    contextWindow: WINDOW,
    requests: [],
    async complete(request: ChatRequest): Promise<ChatResult> {
      this.requests.push(request);
      const tokens = providerTokens(request);
      if (tokens + (request.maxTokens ?? 0) > WINDOW) throw new PermanentError(`This model's maximum context length is ${WINDOW} tokens; the request has ${tokens}`);
      const step = steps[Math.min(next++, steps.length - 1)]!;
      if (step instanceof Error) throw step;
      return { ...step, finishReason: step.toolCalls.length > 0 ? "tool_calls" : "stop", model: "gpt-4o-mini", usage: { promptTokens: tokens, completionTokens: 20, cachedTokens: 0 } };
    },
  };
}

function engineWith(llm: LlmClient, transcript: ChatMessage[], summarizer?: Summarizer, outputs = new Map<string, string>(), systemPrompt = SYSTEM_PROMPT): TurnEngine {
  const tools = new ToolCatalog({ builtins: [createRecallTool()], logger: silentLogger });
  const counter = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));
  const context = createContextManager({
    llm,
    summarizer: summarizer ?? { model: "unused", contextWindow: WINDOW, summarize: () => Promise.reject(new Error("no compaction expected")) },
    settings: { hygieneThreshold: 0.85, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20, replyTokens: 512 },
    tools: () => tools.builtinDefinitions(),
    retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 1_000 },
    counter,
  });
  return {
    llm, tools, context,
    systemPrompt,
    maxSteps: 4,
    maxOutputTokens: 512,
    toolOutputMaxChars: 16_000,
    // Stored originals (capped tool outputs, cut pastes) by id, paged as the Redis store pages them.
    toolOutputs: {
      save: async (_key, _session, id, text) => void outputs.set(id, text),
      read: async (_key, _session, id, offset, length) => {
        const text = outputs.get(id);
        return text === undefined ? undefined : { text: text.slice(offset, offset + length), total: text.length };
      },
    },
    approval: { timeoutMs: 300_000, admins: {} },
    prices: { input: 0, cachedInput: 0, output: 0 },
    idleResetMs: 0,
    messageTimeStamps: false,
    transcriptReader: () => ({
      get: async (id: string) => transcript.find((message) => message.id === id),
      search: async () => ({ messages: [], scanned: 0, continueBefore: undefined }),
    }),
    transcriptLength: async () => transcript.length,
    now: () => 1_000_000,
    timeZone: "UTC",
  };
}

/** Telegram cuts a long paste into parts of at most 4,096 characters (at line ends here), sent back to back with consecutive ids. */
function pasteParts(text: string): InboxEntry[] {
  const chunks: string[] = [];
  for (const line of text.split("\n")) {
    const current = chunks.at(-1);
    if (current !== undefined && current.length + 1 + line.length <= 4_096) chunks[chunks.length - 1] = `${current}\n${line}`;
    else chunks.push(line);
  }
  return chunks.map((chunk, index) => ({
    ...inbound({ platform: "telegram", chatId: "42", sessionKey: "tg:42", messageId: String(100 + index), sentAt: 1_000 + index, text: chunk, ...(index < chunks.length - 1 ? { mayContinue: true } : {}) }),
    receivedAt: 0,
  }));
}

const lines = (count: number, tag: string) => Array.from({ length: count }, (_, index) => `${tag} ${index + 1}: revenue ${index * 37 % 1000} in region ${index % 13}`).join("\n");
const target = { platform: "telegram" as const, chatId: "42" };
const freshState = (systemPrompt = SYSTEM_PROMPT): SessionState => {
  const state = newSessionState(0, 3);
  state.engine.systemPromptBase = systemPrompt;
  return state;
};

describe("a paste three times the window (issue #31)", () => {
  it("is answered: the model sees head and tail with the recall id, the transcript keeps it whole, recall reads its middle", async () => {
    const text = lines(Math.ceil((3 * WINDOW * 4) / 32), "row");
    expect(text.length / 4).toBeGreaterThan(3 * WINDOW);
    const transcript: ChatMessage[] = [];
    const middleLine = text.split("\n")[Math.floor(text.split("\n").length / 2)]!;
    let recallId = "";
    const llm = scriptedLlm([
      { content: null, toolCalls: [{ id: "call_1", type: "function", function: { name: "recall", get arguments() { return JSON.stringify({ id: recallId, offset: text.indexOf(middleLine), length: middleLine.length }); } } }] },
      { content: "The middle row is read.", toolCalls: [] },
    ]);
    const engine = engineWith(llm, transcript);
    const parts = pasteParts(text);
    expect(parts.length).toBeGreaterThan(20);
    // The model's first request: find the recall id it was given before it calls the tool.
    const complete = llm.complete.bind(llm);
    llm.complete = async (request) => {
      if (llm.requests.length === 0) recallId = extractRecallId(String(request.messages.at(-1)?.content ?? "")) ?? "";
      return complete(request);
    };
    const state = freshState();
    const pending = runTurnSegments(engine, { sessionKey: "tg:42", state, batch: parts, target, signal: new AbortController().signal, log: silentLogger });
    const result = await pending;

    // Every request fitted the window by the model's own count.
    expect(llm.requests.length).toBe(2);
    for (const request of llm.requests) expect(providerTokens(request) + 512).toBeLessThanOrEqual(WINDOW);
    const userInContext = result.state.live.filter((message) => message.role === "user");
    expect(userInContext).toHaveLength(1);
    const shown = userInContext[0]!;
    expect(shown.kind).toBe("truncated");
    expect(recallId).toBe(shown.id);
    expect(shown.content.startsWith(text.slice(0, 200))).toBe(true);
    expect(shown.content.endsWith(text.slice(-200))).toBe(true);
    expect(shown.content).not.toContain(middleLine);
    // The transcript holds the whole paste (joined from its parts) under the same id.
    const original = result.transcript.find((message) => message.id === shown.id)!;
    expect(original.content).toBe(text);
    // Told once, with the answer.
    expect(result.replies).toHaveLength(1);
    expect(result.replies[0]!.text.match(/too long to keep whole/g)).toHaveLength(1);
    expect(result.replies[0]!.text).toContain("The middle row is read.");
    expect(result.replies[0]!.text).toContain(`"${shown.id}"`);
    // recall, called in the same turn (before the transcript is committed), read the middle.
    const recalled = result.transcript.find((message) => message.role === "tool")!;
    expect(recalled.content).toContain(middleLine);
  });

  it("after the commit, recall reads the paste's middle from the transcript by the id the preview names", async () => {
    const text = lines(Math.ceil((3 * WINDOW * 4) / 32), "row");
    const middleLine = text.split("\n")[1_000]!;
    const transcript: ChatMessage[] = [];
    const outputs = new Map<string, string>();
    const engine = engineWith(scriptedLlm([{ content: "ok", toolCalls: [] }]), transcript, undefined, outputs);
    const first = await runTurnSegments(engine, { sessionKey: "tg:42", state: freshState(), batch: pasteParts(text), target, signal: new AbortController().signal, log: silentLogger });
    transcript.push(...first.transcript);
    outputs.clear();
    const shown = first.state.live.find((message) => message.role === "user")!;
    const recall = createRecallTool();
    const read = await recall.run({ id: extractRecallId(shown.content ?? ""), offset: text.indexOf(middleLine), length: middleLine.length }, {
      sessionKey: "tg:42", signal: new AbortController().signal, now: () => 0, timeZone: "UTC",
      transcript: engine.transcriptReader("tg:42"),
      outputs: { read: async () => undefined },
    } as never);
    expect(read).toContain(middleLine);
  });

  it("with a system prompt of 78% of the window, is cut to what fits above it, not to a quarter of the window", async () => {
    // ~6,400 of the model's tokens of system prompt: a quarter of the window (2,048) over it passed
    // the window, and every request was refused (a 32K window with 25K of prompt measured the same).
    const systemPrompt = `${SYSTEM_PROMPT}\n${"Follow the house policy on ledgers. ".repeat(620)}`;
    const text = lines(Math.ceil((3 * WINDOW * 4) / 32), "row");
    const llm = scriptedLlm([{ content: "Read it.", toolCalls: [] }]);
    const result = await runTurnSegments(engineWith(llm, [], undefined, new Map(), systemPrompt), {
      sessionKey: "tg:42", state: freshState(systemPrompt), batch: pasteParts(text), target, signal: new AbortController().signal, log: silentLogger,
    });
    expect(providerTokens(llm.requests[0]!)).toBeGreaterThan(0.75 * WINDOW);
    for (const request of llm.requests) expect(providerTokens(request) + 512).toBeLessThanOrEqual(WINDOW);
    const shown = result.state.live.find((message) => message.role === "user")!;
    expect(shown.kind).toBe("truncated");
    expect(shown.content.startsWith(text.slice(0, 100))).toBe(true);
    expect(result.replies[0]!.text).toContain("Read it.");
  });

  it("a short message is not cut and nobody is told", async () => {
    const engine = engineWith(scriptedLlm([{ content: "hello", toolCalls: [] }]), []);
    const result = await runTurnSegments(engine, { sessionKey: "tg:42", state: freshState(), batch: pasteParts("hi there"), target, signal: new AbortController().signal, log: silentLogger });
    expect(result.state.live.find((message) => message.role === "user")!.kind).toBeUndefined();
    expect(result.replies[0]!.text).toBe("hello");
  });
});

describe("a turn that fails after a paid compaction (issue #31)", () => {
  function longSession(): SessionState {
    const state = freshState();
    const live: ChatMessage[] = [{ id: "m1", at: 0, role: "system", content: SYSTEM_PROMPT }];
    for (let index = 0; index < 30; index++) {
      live.push({ id: `m${live.length + 1}`, at: index, role: "user", content: `question ${index}: ${"about the ledger and its entries ".repeat(8)}` });
      live.push({ id: `m${live.length + 1}`, at: index, role: "assistant", content: `answer ${index}: ${"the ledger balances after the entry ".repeat(8)}` });
    }
    state.live = live;
    state.nextSeq = live.length + 1;
    return state;
  }

  it("keeps the compaction (summary in context and transcript) and the user's message once", async () => {
    let summaries = 0;
    const summarizer: Summarizer = { model: "aux", contextWindow: 128_000, summarize: async () => ({ text: `## Goal\nbalance the ledger (summary ${++summaries})` }) };
    const llm = scriptedLlm([new PermanentError("401 from the model")]);
    const engine = engineWith(llm, [], summarizer);
    const state = longSession();
    expect(engine.context.countContext(state, state.live)).toBeGreaterThan(WINDOW / 2);
    const batch = pasteParts("and now, what is the balance?");
    const input = { sessionKey: "tg:42", state, batch, target, log: silentLogger };
    const failure = await runTurnSegments(engine, { ...input, signal: new AbortController().signal }).then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(BatchFailedError);
    const failed = failure as BatchFailedError;
    expect(summaries).toBe(1);
    expect(failed.rest).toEqual([]);
    const settled = settleWithoutAnswer(engine, { ...input, state: failed.done.state, batch: failed.rest }, "Sorry — the model is down.", undefined, failed.done);
    const summary = settled.state.live.find((message) => message.kind === "summary");
    expect(summary?.content).toContain("summary 1");
    expect(settled.transcript.some((message) => message.id === summary!.id)).toBe(true);
    const asked = settled.state.live.filter((message) => message.role === "user" && message.content.includes("what is the balance"));
    expect(asked).toHaveLength(1);
    expect(settled.transcript.filter((message) => message.role === "user" && message.content.includes("what is the balance"))).toHaveLength(1);
    expect(settled.state.live.length).toBeLessThan(state.live.length);
    expect(settled.replies.at(-1)!.text).toBe("Sorry — the model is down.");

    // The next turn starts from the compacted context: no second summary is paid for.
    const next = await runTurnSegments(engineWith(scriptedLlm([{ content: "It balances.", toolCalls: [] }]), [], summarizer), {
      ...input, state: settled.state, batch: pasteParts("again?"), signal: new AbortController().signal,
    });
    expect(summaries).toBe(1);
    expect(next.replies[0]!.text).toContain("It balances.");
  });

  it("without a compaction, a failed turn settles as before (the message kept, no summary)", async () => {
    const engine = engineWith(scriptedLlm([new PermanentError("401")]), []);
    const state = freshState();
    const batch = pasteParts("hello?");
    const failure = (await runTurnSegments(engine, { sessionKey: "tg:42", state, batch, target, signal: new AbortController().signal, log: silentLogger }).catch((error: unknown) => error)) as BatchFailedError;
    expect(failure.rest.map((entry) => entry.text)).toEqual(["hello?"]);
  });
});
