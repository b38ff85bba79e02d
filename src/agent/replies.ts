/**
 * The replies a turn produces: where each goes, which messages it answers, and its id (which
 * names the version the turn commits, so a retried turn produces the same ids).
 */
import type { OutboundReply } from "../core/channel.js";
import type { InboxEntry } from "../session/store.js";
import type { Answering, SettleInput, TurnRun } from "./turn-types.js";

type ReplyExtra = Pick<OutboundReply, "actions" | "replaces" | "preview" | "previewOnly" | "documents" | "private">;

/**
 * A reply to `entries`: it replies to the last of them a person sent; for a button press, to
 * the message that carried the buttons (a press has no platform message of its own). Scheduled
 * messages have no platform message either: a reply that answers only those is sent plain.
 */
export function answering(run: { input: Pick<SettleInput, "target"> }, entries: readonly InboxEntry[]): Answering {
  const fromPeople = entries.filter((entry) => !entry.scheduled);
  const last = fromPeople[fromPeople.length - 1];
  const anchor = last
    ? (last.action ? last.action.sourceMessageId : last.messageId)
    : (entries.length > 0 ? undefined : run.input.target.replyToMessageId);
  const { replyToMessageId: _previous, ...target } = run.input.target;
  return { target: anchor === undefined ? target : { ...target, replyToMessageId: anchor }, inReplyTo: fromPeople.map((entry) => entry.messageId) };
}

/**
 * Reply `index` of this turn. Its id names the version the turn commits, so a retried turn
 * produces the same ids.
 */
export function addReply(run: Pick<TurnRun<unknown>, "input" | "replies">, text: string, kind: OutboundReply["kind"], to: Answering, extra: ReplyExtra = {}): void {
  run.replies.push(buildReply(run.input, run.replies.length, text, kind, to, extra));
}

/** The id of reply `index` of the turn that began from `input.state`. */
export const replyIdOf = (input: Pick<SettleInput, "sessionKey" | "state">, index: number): string => `${input.sessionKey}#${input.state.version + 1}#${index}`;

export function buildReply(input: SettleInput, index: number, text: string, kind: OutboundReply["kind"], to: Answering, extra: ReplyExtra = {}): OutboundReply {
  return {
    replyId: replyIdOf(input, index),
    sessionKey: input.sessionKey,
    target: to.target,
    text,
    inReplyTo: to.inReplyTo,
    kind,
    ...(extra.actions ? { actions: extra.actions } : {}),
    ...(extra.replaces ? { replaces: extra.replaces } : {}),
    ...(extra.preview ? { preview: extra.preview } : {}),
    ...(extra.previewOnly ? { previewOnly: true } : {}),
    ...(extra.documents?.length ? { documents: extra.documents } : {}),
    ...(extra.private ? { private: true } : {}),
  };
}
