/**
 * The checker of every fault test and of the chaos run: from what was submitted, what the
 * session transcripts hold and what the platform received, count what was lost, doubled or
 * answered twice. It only compares ids and texts; it judges nothing with our own code.
 */
export interface Submitted {
  sessionKey: string;
  messageId: string;
  /** Unique per message, so the transcript can be searched for it. */
  text: string;
}

export interface Audit {
  /** Submitted (acknowledged) but absent from the session's transcript. */
  lost: string[];
  /** In the transcript more than once. */
  doubled: string[];
  /** No delivered reply answers it. */
  unanswered: string[];
  /** More than one delivered reply answers it. */
  answeredTwice: string[];
  /** Reply ids (or parts) delivered more than once. */
  duplicateReplies: string[];
}

export function audit(input: {
  submitted: readonly Submitted[];
  /** Per session: the texts of its transcript's user messages, in order. */
  transcripts: ReadonlyMap<string, readonly string[]>;
  /** Per delivered reply: the message ids it answers. */
  answers: ReadonlyArray<readonly string[]>;
  /** Every delivered reply (or part) id, once per delivery. */
  deliveredIds: readonly string[];
}): Audit {
  const result: Audit = { lost: [], doubled: [], unanswered: [], answeredTwice: [], duplicateReplies: [] };
  const answerCount = countOf(input.answers.flat());
  for (const message of input.submitted) {
    // Shared chats prefix the speaker ("Ada: text").
    const copies = (input.transcripts.get(message.sessionKey) ?? []).filter((text) => text === message.text || text.endsWith(`: ${message.text}`)).length;
    if (copies === 0) result.lost.push(message.messageId);
    if (copies > 1) result.doubled.push(message.messageId);
    const answered = answerCount.get(message.messageId) ?? 0;
    if (answered === 0) result.unanswered.push(message.messageId);
    if (answered > 1) result.answeredTwice.push(message.messageId);
  }
  for (const [id, count] of countOf(input.deliveredIds)) if (count > 1) result.duplicateReplies.push(id);
  return result;
}

export const isClean = (result: Audit) => Object.values(result).every((list: string[]) => list.length === 0);

function countOf(items: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1);
  return counts;
}

/** A small seeded PRNG (mulberry32): the same seed replays the same schedule. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
