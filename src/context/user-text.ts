/**
 * User text is capped like every other input (issue #31): documents and tool outputs are, and a
 * paste joined from many parts, or a session whose window shrank, could otherwise hold one user
 * message larger than the window, which no compaction can fold (the latest user message is
 * always kept). Over the cap, a message enters the context as its head and tail with a note that
 * names its id; the transcript keeps the whole original under that id for `recall`.
 */
import type { ChatMessage, UserMessage } from "../core/messages.js";
import { isSummary } from "./message-groups.js";
import { cutGroupToFit } from "./prune.js";
import { MESSAGE_OVERHEAD_TOKENS, type TokenCounter } from "./tokens.js";

/**
 * Share of the window the user messages of one batch may fill together. With the default
 * compaction threshold (0.5) it leaves the summary, the tools and the rest of the tail room
 * under the threshold; `bench/long-session` (huge-paste scenario) measures it.
 */
export const USER_TEXT_WINDOW_SHARE = 0.25;

const USER_MESSAGES: ReadonlySet<"user"> = new Set(["user"]);

/**
 * Share of the room between the fixed overhead and the hard limit the user messages of one batch
 * may fill: with tools and the system prompt past ~65% of the window, a quarter of the window no
 * longer fits above them (32K window, 25K of system prompt: a 400K-character paste was cut to 8K
 * and every request refused), and half of what is left keeps room for the summary and the tail.
 */
export const USER_TEXT_ROOM_SHARE = 0.5;

/**
 * The cap in the counter's units: `share` × the window (provider tokens), and at most
 * `USER_TEXT_ROOM_SHARE` of what `room`'s fixed overhead leaves under its hard limit, ÷ the
 * provider's tokens per counter token.
 */
export function userTextCapTokens(
  contextWindow: number, tokenRatio = 1, share = USER_TEXT_WINDOW_SHARE, room?: { fixedTokens: number; hardLimitTokens: number },
): number {
  const left = room === undefined ? Number.POSITIVE_INFINITY : Math.floor(Math.max(0, room.hardLimitTokens - room.fixedTokens) * USER_TEXT_ROOM_SHARE);
  return Math.floor(Math.min(Math.floor(contextWindow * share), left) / Math.max(tokenRatio, Number.EPSILON));
}

export interface CappedUserMessages {
  /** The messages as the context keeps them: untouched ones are the same objects. */
  messages: UserMessage[];
  /** The ids of the messages that were cut (the transcript keeps their originals). */
  cutIds: string[];
}

/**
 * A batch's user messages fitted into `maxTokens` together: small ones stay whole, the large
 * ones share what is left (water-filling, as a tool group's results are cut), each cut to its
 * first two thirds and last third with `[… cut to fit the context: … recall("m17") for the whole message …]`.
 */
export function capUserMessages(messages: readonly UserMessage[], maxTokens: number, counter: TokenCounter): CappedUserMessages {
  // Most batches are a line or two: no token is shorter than one UTF-8 byte (byte-level BPE, and
  // the chars/4 fallback), and a UTF-16 unit is at most 3 bytes, so a batch this short fits
  // without being counted here (the turn counts each message once, issue #18).
  const bound = messages.reduce((sum, message) => sum + 3 * message.content.length + MESSAGE_OVERHEAD_TOKENS, 0);
  if (bound <= maxTokens) return { messages: [...messages], cutIds: [] };
  const cut = cutGroupToFit(messages, maxTokens, counter, USER_MESSAGES);
  const capped = cut.messages as UserMessage[];
  return { messages: capped, cutIds: capped.filter((message, index) => message !== messages[index]).map((message) => message.id) };
}

/**
 * The last resort inside a compaction: every user message outside `[from, to)` (the middle,
 * which the summary replaces) that alone exceeds `maxTokens` is cut to it. The latest user
 * message is never folded, so without this a paste bigger than the window ends every
 * compaction over the window.
 */
export function cutOversizedUserMessages(
  messages: readonly ChatMessage[],
  middle: { from: number; to: number },
  maxTokens: number,
  counter: TokenCounter,
): UserCuts {
  return recutUserMessages(messages, middle, counter, (message, tokens) =>
    isSummary(message) || tokens <= maxTokens ? undefined : maxTokens);
}

/**
 * After an overflow: the provider counted the request over the window where ours put it under
 * (before a session's first answer the counter is uncalibrated, and counts 10–15% short of some
 * providers), and with the system prompt taking most of a small window, a paste already cut to
 * the cap is the only thing left to shrink — with nothing to fold, the turn failed. Every user
 * message a cap already cut (`kind: "truncated"`) outside `[from, to)` is cut again to half of
 * what it shows; each further overflow halves it again (run-turn's MAX_OVERFLOW_RETRIES). Its
 * note still names the original's id for `recall`.
 */
export function halveCutUserMessages(
  messages: readonly ChatMessage[],
  middle: { from: number; to: number },
  counter: TokenCounter,
): UserCuts {
  return recutUserMessages(messages, middle, counter, (message, tokens) =>
    message.kind === "truncated" ? Math.floor(tokens / 2) : undefined);
}

interface UserCuts {
  messages: ChatMessage[];
  cutMessages: number;
  cutTokens: number;
}

/**
 * Cuts each user message outside `[from, to)` to the token limit `limitOf` gives it (undefined:
 * left as it is), keeping a cut only when it made the message smaller.
 */
function recutUserMessages(
  messages: readonly ChatMessage[],
  middle: { from: number; to: number },
  counter: TokenCounter,
  limitOf: (message: ChatMessage, tokens: number) => number | undefined,
): UserCuts {
  const output = [...messages];
  let cutMessages = 0;
  let cutTokens = 0;
  messages.forEach((message, index) => {
    if (message.role !== "user" || (index >= middle.from && index < middle.to)) return;
    const before = counter.countMessage(message);
    const limit = limitOf(message, before);
    if (limit === undefined) return;
    const [cut] = cutGroupToFit([message], limit, counter, USER_MESSAGES).messages;
    const after = counter.countMessage(cut!);
    if (after >= before) return;
    output[index] = cut!;
    cutMessages += 1;
    cutTokens += before - after;
  });
  return { messages: output, cutMessages, cutTokens };
}
