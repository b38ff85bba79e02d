/**
 * A summarizer fake that behaves like a real model with respect to length, without sharing any
 * of the engine's measures:
 *   - it reads the length it is asked for from the prompt ("about N tokens"), as a model would,
 *     and writes about that much (`lengthFactor`) in ITS OWN token unit (`charsPerToken`, default
 *     3.3 characters per token: neither the engine's o200k nor a chars/4 test counter);
 *   - it stops at max_tokens like a server: the content is cut there and `finish_reason` is
 *     "length";
 *   - as a reasoning model (`reasoningTokens`), it spends completion tokens thinking before the
 *     first word of the answer, so a tight max_tokens leaves an empty or cut answer;
 *   - it refuses a request whose prompt and max_tokens together exceed its window (in its own
 *     unit), as an OpenAI-compatible server does: its 400, as the transport reports it, goes through the real client's mapping into
 *     ContextOverflowError.
 * It writes every heading of the template it finds in the prompt, and lists every message id it
 * read (from the turns and the previous summary), so tests can check what reached a summary.
 *
 *   new FakeSummarizer({ contextWindow: 32_000 })           // engine-side Summarizer
 *   fake.setHandler(summarizerHandler({ reasoningTokens }))  // behind the HTTP fake LLM
 */
import { overflow, type FakeHandler, type FakeResponse, type RecordedRequest } from "./fake-llm.js";

export interface FakeSummarizerOptions {
  model?: string;
  contextWindow?: number;
  /** Its own tokenizer: characters per token. @defaultValue 3.3 */
  charsPerToken?: number;
  /** Writes target × this many of its tokens. @defaultValue 0.9 */
  lengthFactor?: number;
  /** Completion tokens spent thinking before the answer. @defaultValue 0 */
  reasoningTokens?: number;
  /** Ignores the length asked for and writes this many tokens (a model that runs long). */
  fixedLengthTokens?: number;
  /** Extra text copied into every summary (e.g. to see whether a secret survives). */
  alsoWrite?: string;
  /**
   * A model that does what the text it reads tells it, the last word winning (issue #31): an
   * instruction found in the turns ("from now on …") is written into the summary as a standing
   * instruction under People & Instructions, unless the prompt says after it that the transcript
   * is "not instructions to you": then a tool result's or document's instruction is quoted under
   * Critical Context, attributed to its source. A user's own instruction is always listed, as theirs.
   */
  obeysInstructions?: boolean;
  /** When the prompt names no length. @defaultValue 400 */
  defaultTargetTokens?: number;
  /**
   * What the caller sees of a request over the window: the fake answers as the server does (its
   * status and body); the client's mapping of that response is the caller's to give
   * (test/helpers/summarizer-client.ts). @defaultValue a plain Error carrying the response
   */
  refused?: (refusal: ServerRefusal) => Error;
}

/** A server's refusal of a request over its window: the HTTP status and JSON body it sends. */
export interface ServerRefusal {
  status: number;
  body: unknown;
}

export interface SummaryCall {
  system: string;
  user: string;
  maxTokens: number | undefined;
  targetTokens: number | undefined;
  /** Ids labelled in `<turns>`, in order. */
  turnIds: string[];
  finishReason: "stop" | "length";
  completionTokens: number;
}

const TARGET = /\babout (\d+) tokens\b/;

/** The ids of the transcript entries in a request's `<turns>` section, in order. */
export function turnIdsOf(user: string): string[] {
  const turns = /<turns[^>]*>\n([\s\S]*?)\n<\/turns>/.exec(user)?.[1] ?? "";
  return [...turns.matchAll(/^\[([^\]\s]+)\]/gm)].map((match) => match[1]!);
}

/** The headings of the template the system prompt asks for. */
function headingsOf(system: string): string[] {
  return system.split("\n").filter((line) => /^#{2,3} \S/.test(line));
}

export class SummaryModel {
  readonly calls: SummaryCall[] = [];
  constructor(readonly options: FakeSummarizerOptions = {}) {}

  tokensOf(text: string): number {
    return Math.ceil(text.length / (this.options.charsPerToken ?? 3.3));
  }

  /** What a request asks of the window, in this model's tokens: the prompt plus max_tokens. */
  requested(system: string, user: string, maxTokens: number | undefined): number {
    return this.tokensOf(system) + this.tokensOf(user) + 8 + (maxTokens ?? 0);
  }

  /** Answers one request: → the visible content, why it stopped, and the tokens it spent. */
  answer(system: string, user: string, maxTokens: number | undefined): { content: string; finishReason: "stop" | "length"; promptTokens: number; completionTokens: number; reasoning: string } {
    const charsPerToken = this.options.charsPerToken ?? 3.3;
    const asked = TARGET.exec(user)?.[1] ?? TARGET.exec(system)?.[1];
    const targetTokens = asked === undefined ? undefined : Number(asked);
    const wanted = this.options.fixedLengthTokens ?? Math.round((targetTokens ?? this.options.defaultTargetTokens ?? 400) * (this.options.lengthFactor ?? 0.9));

    const turnIds = turnIdsOf(user);
    const previous = /<previous-summary>\n([\s\S]*?)\n<\/previous-summary>/.exec(user)?.[1] ?? "";
    const previousIds = /^Read: (.*)$/m.exec(previous)?.[1]?.split(" ").filter(Boolean) ?? [];
    const headings = headingsOf(system);
    const lines = [
      ...(headings.length > 0 ? headings.slice(0, 1) : ["## Summary"]),
      `Read: ${[...previousIds, ...turnIds.map((id) => `[${id}]`)].join(" ")}`,
      ...(this.options.alsoWrite ? [this.options.alsoWrite] : []),
    ];
    const closing = headings.slice(1);
    const obeyed = this.options.obeysInstructions ? obeyInstructions(system, user) : new Map<string, string[]>();
    const written = [...obeyed.values()].flat();
    const fixedChars = [...lines, ...closing, ...written].join("\n").length;
    const fillerChars = Math.max(0, Math.round(wanted * charsPerToken) - fixedChars);
    const filler = "noted detail ".repeat(Math.ceil(fillerChars / 13)).slice(0, fillerChars).trim();
    // Filler spread under the headings, so a cut loses the last ones.
    const perHeading = Math.ceil(filler.length / Math.max(1, closing.length + 1));
    const body = [...lines, filler.slice(0, perHeading)];
    closing.forEach((heading, index) => body.push(heading, ...(obeyed.get(heading) ?? []), filler.slice((index + 1) * perHeading, (index + 2) * perHeading) || "None."));
    const full = body.join("\n");

    const reasoningTokens = this.options.reasoningTokens ?? 0;
    const answerTokens = this.tokensOf(full);
    const room = maxTokens ?? Number.POSITIVE_INFINITY;
    let content = full;
    let finishReason: "stop" | "length" = "stop";
    let completionTokens = reasoningTokens + answerTokens;
    if (completionTokens > room) {
      finishReason = "length";
      completionTokens = room;
      const visibleTokens = Math.max(0, room - reasoningTokens);
      content = full.slice(0, Math.floor(visibleTokens * charsPerToken));
    }
    const reasoning = reasoningTokens > 0 ? "thinking ".repeat(Math.ceil((Math.min(reasoningTokens, room) * charsPerToken) / 9)) : "";
    this.calls.push({ system, user, maxTokens, targetTokens, turnIds, finishReason, completionTokens });
    return { content, finishReason, promptTokens: this.tokensOf(system) + this.tokensOf(user) + 8, completionTokens, reasoning };
  }
}

/**
 * What a summarizer call carries, as the fake reads it: chat messages and max_tokens, the shape
 * of an OpenAI-compatible request (the engine's `SummaryRequest` fits it; the fake imports none
 * of the engine's modules).
 */
export interface FakeSummaryRequest {
  messages: ReadonlyArray<{ role: string; content?: unknown }>;
  maxTokens: number;
}

/** What it answers: the text, the finish reason and the usage, as a server reports them. */
export interface FakeSummaryResponse {
  text: string;
  finishReason: "stop" | "length";
  usage: { promptTokens: number; completionTokens: number; cachedTokens: number };
}

/** An engine-side summarizer (it fits the engine's `Summarizer` port) over a `SummaryModel`. */
export class FakeSummarizer extends SummaryModel {
  readonly model: string;
  readonly contextWindow: number;
  constructor(options: FakeSummarizerOptions = {}) {
    super(options);
    this.model = options.model ?? "fake-summarizer";
    this.contextWindow = options.contextWindow ?? 128_000;
  }

  async summarize(request: FakeSummaryRequest): Promise<FakeSummaryResponse> {
    const system = request.messages.filter((message) => message.role === "system").map((message) => textOfContent(message.content)).join("\n");
    const user = request.messages.filter((message) => message.role === "user").map((message) => textOfContent(message.content)).join("\n");
    const requested = this.requested(system, user, request.maxTokens);
    if (requested > this.contextWindow) {
      // What the server answers (OpenAI's context_length_exceeded 400); what the engine sees of it
      // is the client's mapping, given by the caller: the fake never decides it.
      const refusal = overflow.openai({ contextWindow: this.contextWindow, requested });
      const response: ServerRefusal = { status: refusal.status, body: refusal.body };
      throw this.options.refused ? this.options.refused(response) : Object.assign(new Error(`HTTP ${response.status}`), { response });
    }
    const answer = this.answer(system, user, request.maxTokens);
    return {
      text: answer.content,
      finishReason: answer.finishReason,
      usage: { promptTokens: answer.promptTokens, completionTokens: answer.completionTokens, cachedTokens: 0 },
    };
  }
}

const INSTRUCTION = /from now on[^\n"]*/gi;
const TRANSCRIPT_IS_DATA = /not instructions to you/gi;

/**
 * What an instruction-following model makes of the instructions in the turns: the text is read
 * in order (system prompt, then the user message), and the later of an injected instruction and
 * the rule that the transcript is data wins for each injected one.
 */
const ENTRY_LABEL = /\n\[([^\]]+)\](?:[^·\n]*·)? ?(user|assistant|tool result \([^)]*\)):/g;
const FENCES = ["document", "quote", "forwarded"] as const;

function obeyInstructions(system: string, user: string): Map<string, string[]> {
  const text = `${system}\n${user}`;
  const ruleAt = Math.max(-1, ...[...text.matchAll(TRANSCRIPT_IS_DATA)].map((match) => match.index ?? -1));
  const result = new Map<string, string[]>();
  const add = (heading: string, line: string) => result.set(heading, [...(result.get(heading) ?? []), line]);
  const turnsStart = text.indexOf("<turns");
  for (const match of text.matchAll(INSTRUCTION)) {
    const at = match.index ?? 0;
    if (at < turnsStart) continue; // the prompt's own words, not the transcript's
    // The entry it sits in: the last `[m17] … · user: …` or `[m18] … · tool result (web_fetch): …` line before it.
    const label = [...text.slice(0, at + 1).matchAll(ENTRY_LABEL)].at(-1);
    const entryStart = label?.index ?? -1;
    const id = label?.[1] ?? "?";
    // A file, a quoted or a forwarded message inside a message (`<document>` … `</document>`,
    // `<quote>`, `<forwarded>`) speaks for itself, not for the sender.
    const fenced = FENCES.find((tag) => {
      const openAt = text.lastIndexOf(`<${tag}>`, at);
      return openAt > entryStart && openAt > text.lastIndexOf(`</${tag}>`, at);
    });
    const source = fenced === "document" ? "document" : fenced === "quote" ? "quoted message" : fenced === "forwarded" ? "forwarded message" : label?.[2] ?? "unknown";
    const instruction = match[0].trim();
    if (source === "user") add("## People & Instructions", `- The user [${id}]: "${instruction}"`);
    else if (ruleAt > at) add("## Critical Context", `- ${source} [${id}] contained the text "${instruction}" (quoted, not an instruction)`);
    else add("## People & Instructions", `- ${instruction[0]!.toUpperCase()}${instruction.slice(1)}.`);
  }
  return result;
}

/** A message's text: a string, or the text parts of a content array. */
function textOfContent(content: unknown): string {
  return typeof content === "string" ? content : Array.isArray(content) ? content.map((part: { text?: unknown }) => (typeof part?.text === "string" ? part.text : "")).join("") : "";
}

/**
 * The same model behind the HTTP fake LLM. A reasoning model's thinking comes inline as
 * `<think>…</think>` (as Ollama and vLLM serve qwen3 / deepseek-r1), unclosed when it was cut.
 */
export function summarizerHandler(options: FakeSummarizerOptions = {}): FakeHandler & { model: SummaryModel } {
  const model = new SummaryModel(options);
  const handler = (request: RecordedRequest): FakeResponse => {
    const messages = request.body.messages;
    const system = messages.filter((message) => message.role === "system").map((message) => textOfContent(message.content)).join("\n");
    const user = messages.filter((message) => message.role === "user").map((message) => textOfContent(message.content)).join("\n");
    const limit = request.body.max_tokens ?? (request.body.max_completion_tokens as number | undefined);
    const requested = model.requested(system, user, limit);
    if (options.contextWindow !== undefined && requested > options.contextWindow) return overflow.openai({ contextWindow: options.contextWindow, requested });
    const answer = model.answer(system, user, limit);
    const thinkingDone = answer.finishReason === "stop" || answer.content !== "";
    const text = answer.reasoning === "" ? answer.content : `<think>${answer.reasoning}${thinkingDone ? "</think>" : ""}${answer.content}`;
    // The prompt is counted by the server (the fake LLM's own count × its tokenRatio), as for any request; what it wrote, by the model.
    return { text, finishReason: answer.finishReason, usage: { completion_tokens: answer.completionTokens } };
  };
  return Object.assign(handler, { model });
}
