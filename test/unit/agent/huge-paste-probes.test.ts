/**
 * Hostile-review probes of cd3b16a (a paste capped by the room the fixed overhead leaves) through a
 * real turn, set up as huge-paste.test.ts is. Issue #31 item 1 through a real turn (`runTurnSegments` with the session's context manager,
 * the recall tool and the paste joiner): a paste three times the window, sent as Telegram parts,
 * is answered; the model sees its head and tail with the recall id, the transcript keeps it
 * whole, the user is told once, and `recall` reads the middle back. A turn whose model fails
 * after a compaction it paid for keeps that compaction.
 */
import { describe, expect, it } from "vitest";
import { runTurnSegments, type TurnEngine } from "../../../src/agent/index.js";
import type { ContextHooks } from "../../../src/session-context/index.js";
import { createContextManager } from "../../../src/session-context/session-context.js";
import { createTokenCounter, extractRecallId, type ChatMessage, type Summarizer } from "../../../src/context/index.js";
import type { ChatRequest, ChatResult, LlmClient } from "../../../src/core/llm.js";
import { ContextOverflowError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/logger.js";
import { newSessionState, type SessionState } from "../../../src/session/state.js";
import type { InboxEntry } from "../../../src/session/store.js";
import { createRecallTool, ToolCatalog } from "../../../src/tools/index.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { FakeSummarizer } from "../../fakes/fake-summarizer.js";

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
      // As src/llm/errors.ts maps a provider's context_length_exceeded.
      if (tokens + (request.maxTokens ?? 0) > WINDOW) throw new ContextOverflowError(`This model's maximum context length is ${WINDOW} tokens; the request has ${tokens}`, { contextWindow: WINDOW });
      const step = steps[Math.min(next++, steps.length - 1)]!;
      if (step instanceof Error) throw step;
      return { ...step, finishReason: step.toolCalls.length > 0 ? "tool_calls" : "stop", model: "gpt-4o-mini", usage: { promptTokens: tokens, completionTokens: 20, cachedTokens: 0 } };
    },
  };
}

function engineWith(llm: LlmClient, transcript: ChatMessage[], summarizer?: Summarizer, outputs = new Map<string, string>(), systemPrompt = SYSTEM_PROMPT, hooks?: ContextHooks): TurnEngine {
  const tools = new ToolCatalog({ builtins: [createRecallTool()], logger: silentLogger });
  const counter = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));
  const context = createContextManager({
    llm,
    summarizer: summarizer ?? { model: "unused", contextWindow: WINDOW, summarize: () => Promise.reject(new Error("no compaction expected")) },
    settings: { hygieneThreshold: 0.85, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20, replyTokens: 512 },
    tools: () => tools.builtinDefinitions(),
    retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 1_000 },
    counter,
    ...(hooks ? { hooks } : {}),
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


const hasLoneSurrogate = (text: string) => /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
const run = (engine: TurnEngine, batch: InboxEntry[], state = freshState()) =>
  runTurnSegments(engine, { sessionKey: "tg:42", state, batch, target, signal: new AbortController().signal, log: silentLogger });

/** Pages through `recall` until it says nothing is left: what the model can read back of `id`. */
async function recallAll(engine: TurnEngine, id: string): Promise<{ text: string; pages: string[] }> {
  const recall = createRecallTool();
  const pages: string[] = [];
  let text = "";
  let offset = 0;
  for (let guard = 0; guard < 1_000; guard++) {
    const page = String(await recall.run({ id, offset }, {
      sessionKey: "tg:42", signal: new AbortController().signal, now: () => 0, timeZone: "UTC",
      transcript: engine.transcriptReader("tg:42"),
      outputs: { read: (readId: string, from: number, length: number) => engine.toolOutputs.read("tg:42", "s", readId, from, length) },
    } as never));
    pages.push(page);
    const body = page.slice(page.indexOf(":\n") + 2);
    const more = /\n\[(\d+) more characters: recall with id "[^"]+" and offset (\d+)\]$/.exec(body);
    text += more ? body.slice(0, more.index) : body;
    if (!more) break;
    offset = Number(more[2]);
  }
  return { text, pages };
}


describe("probes of the paste cap (cd3b16a)", () => {
  for (const share of [0.85, 0.88]) {
    it(`an 8K window with a system prompt of ${share * 100}% of it: the paste is answered (an overflow halves it)`, async () => {
      const systemPrompt = `${SYSTEM_PROMPT}\n${"Follow the house policy on ledgers. ".repeat(Math.floor((share * WINDOW * 3.5) / 36))}`;
      const text = lines(Math.ceil((3 * WINDOW * 4) / 32), "row");
      const llm = scriptedLlm([{ content: "Read it.", toolCalls: [] }]);
      const result = await run(engineWith(llm, [], undefined, new Map(), systemPrompt), pasteParts(text), freshState(systemPrompt));
      // Before a session's first answer our count is ~14% short of this provider's: the paste cut
      // to the cap overflows, and with nothing to fold the turn failed. Each overflow now halves it.
      expect(llm.requests.length).toBeGreaterThan(1);
      expect(providerTokens(llm.requests.at(-1)!) + 512).toBeLessThanOrEqual(WINDOW);
      expect(result.replies[0]!.text).toContain("Read it.");
      expect(result.replies[0]!.text.match(/too long to keep whole/g)).toHaveLength(1);
      const shown = result.state.live.find((message) => message.role === "user")!;
      expect(shown.kind).toBe("truncated");
      expect(shown.content.startsWith(text.slice(0, 40))).toBe(true);
      expect(extractRecallId(shown.content)).toBe(shown.id);
      expect(result.transcript.find((message) => message.id === shown.id)!.content).toBe(text);
    });
  }

  it("an emoji paste is cut between characters, never inside a surrogate pair, and recall's pages hold none either", async () => {
    // An odd-length prefix (the group's speaker) puts every emoji at an odd offset.
    const text = `${"😀 ✅ 日本語 ".repeat(6_000)}end`;
    const outputs = new Map<string, string>();
    const transcript: ChatMessage[] = [];
    const engine = engineWith(scriptedLlm([{ content: "ok", toolCalls: [] }]), transcript, undefined, outputs);
    const batch = [{ ...inbound({ platform: "telegram", chatId: "42", sessionKey: "tg:42", messageId: "100", sentAt: 1_000, text, chatType: "group", userName: "Bob" }), receivedAt: 0 }];
    const result = await run(engine, batch);
    const shown = result.state.live.find((message) => message.role === "user")!;
    expect(shown.kind).toBe("truncated");
    expect(hasLoneSurrogate(shown.content)).toBe(false);
    transcript.push(...result.transcript);
    const read = await recallAll(engine, extractRecallId(shown.content)!);
    for (const page of read.pages) expect(hasLoneSurrogate(page)).toBe(false);
    expect(read.text).toBe(`Bob: ${text}`);
    // The same from the transcript, once the stored original is gone (the chat's quota).
    outputs.clear();
    const fromTranscript = await recallAll(engine, extractRecallId(shown.content)!);
    expect(fromTranscript.pages.length).toBeGreaterThan(2);
    for (const page of fromTranscript.pages) expect(hasLoneSurrogate(page)).toBe(false);
    expect(fromTranscript.text).toBe(`Bob: ${text}`);
  });

  it("a paste at the cap is kept whole; one character more and it is cut to the cap", async () => {
    const engine = engineWith(scriptedLlm([{ content: "ok", toolCalls: [] }]), []);
    const state = freshState();
    state.live = [{ id: "m1", at: 0, role: "system", content: SYSTEM_PROMPT }];
    state.nextSeq = 2;
    const counter = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));
    const message = (content: string) => ({ id: "m2", at: 0, role: "user" as const, content });
    // Find the cap: the largest message admitted whole.
    let low = 0;
    let high = 4 * WINDOW;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      const admitted = engine.context.admitUserMessages(state, [message("x".repeat(middle))], engine.tools.builtinDefinitions());
      if (admitted.cutIds.length === 0) low = middle;
      else high = middle - 1;
    }
    const atCap = counter.countMessage(message("x".repeat(low)));
    const over = engine.context.admitUserMessages(state, [message("x".repeat(low + 4))], engine.tools.builtinDefinitions());
    expect(over.cutIds).toEqual(["m2"]);
    expect(counter.countMessage(over.messages[0]!)).toBeLessThanOrEqual(atCap);
    expect(atCap).toBeGreaterThan(WINDOW / 8);
  });

  it("a paste joined from parts, the first with a document: answered, the user told once, recall returns the whole original", async () => {
    const text = lines(Math.ceil((3 * WINDOW * 4) / 32), "row");
    const parts = pasteParts(text);
    parts[0] = { ...parts[0]!, attachmentText: `[document spec.txt, 40 KB, its text:]\n${lines(300, "spec")}\n[end of spec.txt]` };
    const transcript: ChatMessage[] = [];
    const outputs = new Map<string, string>();
    const llm = scriptedLlm([{ content: "Read both.", toolCalls: [] }]);
    const engine = engineWith(llm, transcript, undefined, outputs);
    const result = await run(engine, parts);
    for (const request of llm.requests) expect(providerTokens(request) + 512).toBeLessThanOrEqual(WINDOW);
    expect(result.replies).toHaveLength(1);
    expect(result.replies[0]!.text.match(/too long to keep whole/g)).toHaveLength(1);
    const shown = result.state.live.find((message) => message.role === "user")!;
    transcript.push(...result.transcript);
    const original = result.transcript.find((message) => message.id === shown.id)!;
    const read = await recallAll(engine, shown.id);
    expect(read.text).toBe(original.content);
    expect(original.content).toContain("[end of spec.txt]");
    expect(original.content!.endsWith(text.slice(-200))).toBe(true);
  });

  it("two people paste in a group in one batch: both are cut to share the cap, told once naming both", async () => {
    const text = lines(Math.ceil((2 * WINDOW * 4) / 32), "row");
    const batch = ["Ada", "Bob"].map((userName, index) => ({
      ...inbound({ platform: "telegram", chatId: "42", sessionKey: "tg:42", messageId: String(200 + index), sentAt: 1_000 + index, text, chatType: "group", userName, userId: userName }),
      receivedAt: 0,
    }));
    const llm = scriptedLlm([{ content: "Both read.", toolCalls: [] }]);
    const result = await run(engineWith(llm, []), batch);
    for (const request of llm.requests) expect(providerTokens(request) + 512).toBeLessThanOrEqual(WINDOW);
    const users = result.state.live.filter((message) => message.role === "user");
    expect(users.map((message) => message.kind)).toEqual(["truncated", "truncated"]);
    expect(result.replies.map((reply) => reply.text).join("\n").match(/too long to keep whole/g)).toHaveLength(1);
    expect(result.replies.at(-1)!.text).toContain(`"${users[0]!.id}", "${users[1]!.id}"`);
  });
});

describe("a session's first paste with a memory snapshot", () => {
  it("is cut once, at admission, to the room the memory block leaves: no compaction cuts it again", async () => {
    // Half the window of system prompt, and a snapshot of the default memory (2,000 characters)
    // and pins (1,000), taken at session start (MemoryService.prepareTurn) and sent on every
    // request's system prompt.
    const systemPrompt = `${SYSTEM_PROMPT}\n${"Follow the house policy on ledgers. ".repeat(Math.floor((0.5 * WINDOW * 4) / 36))}`;
    const snapshot = `## What I remember\n${Array.from({ length: 90 }, (_, index) => `- [u${index + 1}] The user keeps ledger ${index + 1} for region ${index % 13}.`).join("\n")}`;
    const hooks: ContextHooks = { systemBlock: (state) => state.memory?.snapshot ?? "" };
    const summarizer = new FakeSummarizer({ contextWindow: WINDOW });
    const llm = scriptedLlm([{ content: "Read it.", toolCalls: [] }]);
    const engine: TurnEngine = {
      ...engineWith(llm, [], summarizer, new Map(), systemPrompt, hooks),
      // Only the snapshot the turn asks for at session start: the rest of the memory service is not used here.
      memory: { prepareTurn: async (state: SessionState) => void (state.memory = { ...state.memory, snapshot }) } as unknown as TurnEngine["memory"],
    };
    const text = lines(Math.ceil((3 * WINDOW * 4) / 32), "row");
    const result = await run(engine, pasteParts(text), freshState(systemPrompt));
    expect(result.replies[0]!.text).toContain("Read it.");
    const shown = result.state.live.find((message) => message.role === "user")!;
    expect(shown.kind).toBe("truncated");
    // One request, carrying the paste as admission cut it. On main the snapshot was taken after
    // the cap: the first request (7,704 of the provider's tokens + 512 of reply) overflowed and
    // the overflow compaction cut the paste again.
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]!.messages.some((message) => message.content === shown.content)).toBe(true);
    expect(result.state.stats.compactions).toBe(0);
    expect(summarizer.calls).toHaveLength(0);
  });
});
