/**
 * Phase 1 (prune, no LLM) and the tail's cut-to-fit. Both replace a tool result's content and
 * nothing else: the message keeps its id and its place, so the call/result pair stays valid,
 * and the transcript still holds the original under that id for the `recall` tool.
 */
import type { ChatMessage, ToolCall, ToolMessage, UserMessage } from "../core/messages.js";
import { bridgeDocuments } from "./documents.js";
import { toolCallsById } from "./message-groups.js";
import type { TokenCounter } from "./tokens.js";

/** Tool results up to this many characters stay: a placeholder would save next to nothing. */
export const PRUNE_MIN_CHARS = 200;
const ARGUMENTS_MAX_CHARS = 100;
const ARGUMENT_VALUE_MAX_CHARS = 40;
/** What the summarizer reads of one tool result (head and end), in the transcript and in `foldText`. */
export const FOLD_TOOL_MAX_CHARS = 3_000;
/** A cut never leaves less than this much of a result: the head of an output is what the model needs most. */
const MIN_CUT_TOKENS = 64;

/** The id under which the transcript keeps the untouched original. */
export const recallIdOf = (message: ChatMessage): string => message.originalId ?? message.id;

const formatCount = (value: number): string => value.toLocaleString("en-US");

/** The `recall("…")` id a placeholder or cut note carries. */
export function extractRecallId(content: string): string | undefined {
  return /recall\("([^"]+)"\)/.exec(content)?.[1];
}

/** Tool-call arguments on one short line: long string values shortened, the whole capped. */
export function shortenArguments(argumentsJson: string): string {
  let text: string;
  try {
    const shorten = (value: unknown): unknown => {
      if (typeof value === "string") return value.length > ARGUMENT_VALUE_MAX_CHARS ? `${value.slice(0, ARGUMENT_VALUE_MAX_CHARS)}…` : value;
      if (Array.isArray(value)) return value.map(shorten);
      if (value !== null && typeof value === "object") {
        return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, shorten(inner)]));
      }
      return value;
    };
    text = JSON.stringify(shorten(JSON.parse(argumentsJson)));
  } catch {
    // Some backends send non-JSON arguments; show them as they are.
    text = argumentsJson.replace(/\s+/g, " ");
  }
  return text.length > ARGUMENTS_MAX_CHARS ? `${sliceSafely(text, 0, ARGUMENTS_MAX_CHARS)}…` : text;
}

/** `[tool output pruned: read_file {"path":"src/a.ts"} · 12,345 chars · recall("m17") to fetch it]` */
export function prunedPlaceholder(message: ToolMessage, call: ToolCall | undefined): string {
  const tool = call ? `${call.function.name} ${shortenArguments(call.function.arguments)}` : "unknown tool";
  return `[tool output pruned: ${tool} · ${formatCount(message.content.length)} chars · recall("${recallIdOf(message)}") to fetch it]`;
}

export interface PruneResult {
  /** A new array; untouched messages are the same objects. */
  messages: ChatMessage[];
  prunedMessages: number;
  /** Tokens the placeholders saved. */
  prunedTokens: number;
}

/** Replaces every tool result longer than PRUNE_MIN_CHARS in `[from, to)` with a one-line placeholder. */
export function pruneToolResults(
  messages: readonly ChatMessage[],
  range: { from: number; to: number },
  counter: TokenCounter,
): PruneResult {
  const calls = toolCallsById(messages);
  const result = [...messages];
  let prunedMessages = 0;
  let prunedTokens = 0;
  for (let index = range.from; index < range.to; index += 1) {
    const message = messages[index]!;
    if (message.role !== "tool" || message.kind === "pruned" || message.content.length <= PRUNE_MIN_CHARS) continue;
    const pruned: ToolMessage = {
      ...withoutTokens(message),
      content: prunedPlaceholder(message, calls.get(message.tool_call_id)),
      kind: "pruned",
      originalId: recallIdOf(message),
      foldText: foldClip(message.content, FOLD_TOOL_MAX_CHARS, recallIdOf(message)),
    };
    prunedTokens += counter.countMessage(message) - counter.countMessage(pruned);
    result[index] = pruned;
    prunedMessages += 1;
  }
  return { messages: result, prunedMessages, prunedTokens };
}

/** A copy without the cached count, which belonged to the old content. */
function withoutTokens<T extends ChatMessage>(message: T): T {
  const copy = { ...message };
  delete copy.tokens;
  return copy;
}

/** Slices without splitting a UTF-16 surrogate pair (a lone half is invalid on the wire). */
export function sliceSafely(text: string, start: number, end: number): string {
  const isLowSurrogate = (index: number) => index > 0 && index < text.length && /[\uDC00-\uDFFF]/.test(text[index]!);
  const from = isLowSurrogate(start) ? start + 1 : start;
  const to = isLowSurrogate(end) ? end - 1 : end;
  return text.slice(from, Math.max(from, to));
}

/** A cut's result: the content, and how much of it before and after the note is shown text (MessageMeta.cut). */
interface Clipped {
  content: string;
  headChars: number;
  tailChars: number;
}

/**
 * What the kept text must add at a cut so that the structure it holds reads as it did whole
 * (a document's fence: documents.ts `bridgeDocuments`): `close` ends what the head leaves open,
 * `reopen` starts again what the tail continues.
 */
export type CutBridge = (text: string, headEnd: number, tailStart: number) => { close: string; reopen: string };

interface ClipOptions {
  /** Where an earlier cut's note was in `text` (its head before, its tail after): never kept, never cut across. */
  gap?: { from: number; to: number };
  bridge?: CutBridge;
}

/** The first two thirds and the last third of `keepChars` around the note: outputs put errors and totals at the end. */
function clipAround(text: string, keepChars: number, note: (shownChars: number) => string, options: ClipOptions): Clipped {
  let headChars = Math.ceil((keepChars * 2) / 3);
  let tailChars = keepChars - headChars;
  if (options.gap !== undefined) {
    const headRoom = options.gap.from;
    const tailRoom = text.length - options.gap.to;
    if (tailChars > tailRoom) [headChars, tailChars] = [headChars + tailChars - tailRoom, tailRoom];
    if (headChars > headRoom) [headChars, tailChars] = [headRoom, Math.min(tailRoom, tailChars + headChars - headRoom)];
  }
  const head = sliceSafely(text, 0, headChars);
  const tail = sliceSafely(text, text.length - tailChars, text.length);
  const { close, reopen } = options.bridge?.(text, head.length, text.length - tail.length) ?? { close: "", reopen: "" };
  return {
    content: `${head}${close}\n${note(head.length + tail.length)}\n${reopen}${tail}`,
    headChars: head.length + close.length,
    tailChars: reopen.length + tail.length,
  };
}

/** Keeps the first two thirds and the last third of `keepChars`: outputs put errors and totals at the end. */
export function clipMiddle(text: string, keepChars: number, note: (shownChars: number) => string, bridge?: CutBridge): string {
  if (text.length <= keepChars) return text;
  return clipAround(text, keepChars, note, bridge === undefined ? {} : { bridge }).content;
}

/** A message's text as the summarizer reads it: clipped to `maxChars`, with a note naming the recall id. */
export const foldClip = (text: string, maxChars: number, recallId: string, bridge?: CutBridge): string =>
  clipMiddle(text, maxChars, (shown) => `[… ${text.length - shown} chars omitted; recall("${recallId}") for all …]`, bridge);

/**
 * Cuts text to at most `maxTokens` (note included), shrinking until the count agrees. Text with
 * a `gap` is an earlier cut's head and tail, cut again (and given a new note) whatever it counts.
 */
function cutToTokens(text: string, maxTokens: number, counter: TokenCounter, note: (shownChars: number) => string, options: ClipOptions = {}): Clipped | undefined {
  const tokens = counter.countText(text);
  if (options.gap === undefined && tokens <= maxTokens) return undefined;
  const shownChars = text.length - (options.gap === undefined ? 0 : options.gap.to - options.gap.from);
  let keepChars = Math.min(shownChars, Math.floor((text.length * maxTokens) / Math.max(tokens, 1)));
  for (;;) {
    const candidate = clipAround(text, keepChars, note, options);
    if (keepChars === 0 || counter.countText(candidate.content) <= maxTokens) return candidate;
    keepChars = Math.floor(keepChars * 0.85);
  }
}

/** Cuts text to at most `maxTokens` (note included), shrinking until the count agrees. */
export function cutTextToTokens(text: string, maxTokens: number, counter: TokenCounter, note: (shownChars: number) => string): string {
  return cutToTokens(text, maxTokens, counter, note)?.content ?? text;
}

/**
 * The text a cut starts from: a message cut before is its shown head and tail (joined by a line
 * break, the gap, which is never kept), with the original's length; any other, its content.
 */
function shownText(message: ToolMessage | UserMessage): { text: string; originalChars: number; gap?: { from: number; to: number } } {
  const cut = message.kind === "truncated" ? message.cut : undefined;
  const content = message.content;
  // A message cut before `cut` was recorded: its content, note and all, as before.
  if (cut === undefined || cut.headChars + cut.tailChars > content.length) return { text: content, originalChars: cut?.originalChars ?? content.length };
  return {
    text: `${content.slice(0, cut.headChars)}\n${content.slice(content.length - cut.tailChars)}`,
    originalChars: cut.originalChars,
    gap: { from: cut.headChars, to: cut.headChars + 1 },
  };
}

export interface CutResult {
  messages: ChatMessage[];
  cutMessages: number;
}

/** Messages whose text a cut may shorten: tool results, and (user text capped like everything else, issue #31) user messages. */
export type CuttableRole = "tool" | "user";

const TOOL_RESULTS: ReadonlySet<CuttableRole> = new Set(["tool"]);

/** The note a cut leaves: how much is shown, and the id `recall` reads the whole original under. */
export function cutNote(role: CuttableRole, id: string, totalChars: number): (shownChars: number) => string {
  const what = role === "user" ? "the whole message" : "the full output";
  return (shown) => `[… cut to fit the context: ${formatCount(shown)} of ${formatCount(totalChars)} chars shown · recall("${id}") for ${what} …]`;
}

/**
 * The newest group is always kept, even when it alone exceeds what the tail may hold (a huge
 * tool result just came back). Its tool results (and, with `roles`, its user messages) are then
 * cut so the group fits `maxTokens`: small ones stay whole and the rest share what remains
 * equally (water-filling).
 */
export function cutGroupToFit(group: readonly ChatMessage[], maxTokens: number, counter: TokenCounter, roles: ReadonlySet<CuttableRole> = TOOL_RESULTS): CutResult {
  const total = group.reduce((sum, message) => sum + counter.countMessage(message), 0);
  if (total <= maxTokens) return { messages: [...group], cutMessages: 0 };
  const results = group
    .map((message, index) => ({ message, index, tokens: counter.countText(message.content ?? "") }))
    .filter((entry) => (entry.message.role === "tool" || entry.message.role === "user") && roles.has(entry.message.role))
    .sort((a, b) => a.tokens - b.tokens);
  if (results.length === 0) return { messages: [...group], cutMessages: 0 };

  let available = maxTokens - (total - results.reduce((sum, entry) => sum + entry.tokens, 0));
  const output = [...group];
  let cutMessages = 0;
  results.forEach((entry, position) => {
    const share = Math.max(MIN_CUT_TOKENS, Math.floor(available / (results.length - position)));
    available -= Math.min(entry.tokens, share);
    if (entry.tokens <= share) return;
    const message = entry.message as ToolMessage | UserMessage;
    const id = recallIdOf(message);
    // A message cut before is cut again from what it shows; the note still names the original's id and size.
    const shown = shownText(message);
    // A user message's documents stay fenced for the summarizer (bridgeDocuments).
    const options: ClipOptions = { ...(shown.gap === undefined ? {} : { gap: shown.gap }), ...(message.role === "user" ? { bridge: bridgeDocuments } : {}) };
    const cut = cutToTokens(shown.text, share, counter, cutNote(message.role, id, shown.originalChars), options);
    if (cut === undefined) return;
    output[entry.index] = {
      ...withoutTokens(message), content: cut.content, kind: "truncated", originalId: id,
      cut: { originalChars: shown.originalChars, headChars: cut.headChars, tailChars: cut.tailChars },
    };
    cutMessages += 1;
  });
  return { messages: output, cutMessages };
}
