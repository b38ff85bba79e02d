/**
 * Long pastes split by the client (Telegram cuts text over 4,096 characters into several
 * messages) are answered once, as one message. The adapter marks a message that may be
 * continued (`mayContinue`); the parts are stored one by one (a webhook must acknowledge each
 * before Telegram sends the next, so none can be held back unstored), and the turn joins them:
 * it waits briefly when the newest message may still be continued, then joins each part to the
 * one before it. Pure, apart from the clock the caller passes.
 */
import type { InboundMessage } from "../core/channel.js";

/** How long after a possibly continued part the rest must have arrived (clients send them back to back). */
export const PASTE_WAIT_MS = 1_500;
/** Platform dates have 1 s resolution: parts sent 1.5 s apart may be 2 s apart on paper. */
const PASTE_GAP_MS = 2_000;

type Part = InboundMessage & { receivedAt: number };

/**
 * B continues A: same sender and place, the very next message id, sent right after it; or the
 * next item of the same album (Telegram sends an album's pictures as separate messages).
 */
function continues(previous: Part, next: Part): boolean {
  // An album item's `mayContinue` waits for the rest of its album, not for a paste.
  if (previous.mediaGroupId !== undefined) {
    return next.mediaGroupId === previous.mediaGroupId && next.platform === previous.platform && next.chatId === previous.chatId && next.userId === previous.userId;
  }
  return previous.mayContinue === true &&
    next.platform === previous.platform &&
    next.chatId === previous.chatId &&
    next.threadId === previous.threadId &&
    next.userId === previous.userId &&
    Number(next.messageId) === Number(previous.messageId) + 1 &&
    next.sentAt - previous.sentAt <= PASTE_GAP_MS;
}

/** Consecutive parts of one paste become one entry (the first part's id and reply context). */
export function joinPasteParts<T extends Part>(batch: readonly T[]): T[] {
  const joined: T[] = [];
  let last: T | undefined;
  for (const entry of batch) {
    const previous = joined[joined.length - 1];
    if (previous && last && continues(last, entry)) {
      joined[joined.length - 1] = joinTwo(previous, entry);
    } else {
      joined.push(entry);
    }
    last = entry;
  }
  return joined;
}

function joinTwo<T extends Part>(previous: T, entry: T): T {
  const text = [previous.text, entry.text].filter((part) => part !== "").join("\n");
  const attachments = [...(previous.attachments ?? []), ...(entry.attachments ?? [])];
  const attachmentText = [previous.attachmentText, entry.attachmentText].filter((part) => part !== undefined && part !== "").join("\n");
  return {
    ...previous,
    text,
    ...(attachments.length > 0 ? { attachments } : {}),
    ...(attachmentText !== "" ? { attachmentText } : {}),
  };
}

/** How long to wait before answering, for the rest of a paste whose newest part just arrived. */
export function pasteWaitMs(batch: readonly Part[], now: number): number {
  const newest = batch[batch.length - 1];
  if (newest?.mayContinue !== true) return 0;
  return Math.max(0, newest.receivedAt + PASTE_WAIT_MS - now);
}
