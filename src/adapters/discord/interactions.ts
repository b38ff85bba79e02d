/**
 * Answers through interactions. A slash command is acknowledged at once with a deferred reply
 * ("thinking…", ephemeral when the registry says its answer is private): Discord wants an answer
 * within 3 s and the command runs in the worker behind the channel's queue. The worker's reply
 * then edits that deferred message and sends later parts and files as follow-ups, with the
 * interaction's token, which Discord honours for 15 minutes from the interaction. A private
 * reply to a button press is an ephemeral follow-up of the press. Interactions are held in
 * memory: after a restart, once the token is too old, or when Discord no longer knows it (401,
 * 404), a public reply goes to the channel as a message, as a typed command's would; a private
 * one is never shown to the channel (deliver-reply.ts drops it, with one log line).
 */
import { MessageFlags, Routes, type REST, type RawFile } from "discord.js";
import type { OutboundReply, PartSent, SendOptions } from "../channel-adapter.js";
import type { Logger } from "../../logger.js";
import { OutcomeUnknown, traceSends, type SendTrace } from "./request-outcome.js";
import { toSendError } from "./send-reply.js";

/** Raw API form (these calls bypass discord.js' option mapping): nobody is pinged. */
const NO_MENTIONS = { parse: [] as string[] };

/** Discord honours an interaction token this long after the interaction was created. */
export const INTERACTION_TOKEN_TTL_MS = 15 * 60_000;
/** Not used in its last minute: a reply that starts then might lose parts to the expiry. */
const TOKEN_MARGIN_MS = 60_000;

export interface OpenInteraction {
  id: string;
  applicationId: string;
  token: string;
  /** Unix ms of the interaction (its snowflake time). */
  createdAt: number;
  /** `command`: answered by a deferred reply; `button`: by a deferred update of its message. */
  kind: "command" | "button";
  /** The deferred reply is ephemeral (the registry's privateAnswer). */
  ephemeral: boolean;
  /** Settles once the acknowledgement was sent (or given up): replies through the token wait for it. */
  acknowledged: Promise<unknown>;
}

export interface InteractionRepliesOptions {
  rest: REST;
  logger: Logger;
  now?: () => number;
}

export class InteractionReplies {
  /** By the inbound message id of the interaction (`ix:<id>`). */
  private readonly open = new Map<string, OpenInteraction>();
  private readonly now: () => number;

  constructor(private readonly options: InteractionRepliesOptions) {
    this.now = options.now ?? Date.now;
  }

  remember(messageId: string, interaction: OpenInteraction): void {
    const now = this.now();
    for (const [key, entry] of this.open) if (now - entry.createdAt >= INTERACTION_TOKEN_TTL_MS) this.open.delete(key);
    this.open.set(messageId, interaction);
  }

  /**
   * The interaction that carries `reply`, if one may: a reply to a slash command, or a private
   * reply to a button press, whose token is still good.
   */
  carrier(reply: Pick<OutboundReply, "inReplyTo" | "private">): OpenInteraction | undefined {
    for (const messageId of [...reply.inReplyTo].reverse()) {
      const entry = this.open.get(messageId);
      if (!entry) continue;
      if (this.now() - entry.createdAt > INTERACTION_TOKEN_TTL_MS - TOKEN_MARGIN_MS) {
        if (reply.private !== true) this.options.logger.info({ interactionId: entry.id }, "discord interaction token too old; the reply goes to the channel");
        this.open.delete(messageId);
        return undefined;
      }
      if (entry.kind === "button" && reply.private !== true) return undefined;
      return entry;
    }
    return undefined;
  }

  /**
   * Sends `parts` (and `documents`) from `fromPart` through the interaction. Part 1 of a command's
   * reply edits the deferred message; a private reply to a public deferral deletes it and goes
   * out as an ephemeral follow-up instead. → the first part not delivered (the rest goes to the
   * channel, or for a private reply nowhere) when Discord no longer takes the token.
   * `onPartRequest` hears when the request carrying a part is on the wire: an interaction's
   * webhook takes no nonce, and only this process knows the interaction, so the next gateway
   * would post a part whose answer was still out at exit again, to the channel (issue 28).
   */
  async deliver(
    entry: OpenInteraction,
    reply: Pick<OutboundReply, "private" | "documents" | "replyId">,
    parts: readonly string[],
    fromPart: number,
    onPartSent: (partIndex: number, sent: PartSent) => Promise<void>,
    onPartRequest?: SendOptions["onPartRequest"],
  ): Promise<number> {
    const { rest } = this.options;
    await entry.acknowledged;
    const ephemeral = entry.ephemeral || reply.private === true;
    const flags = ephemeral ? MessageFlags.Ephemeral : 0;
    const documents = reply.documents ?? [];
    const total = parts.length + documents.length;
    for (let index = fromPart; index < total; index += 1) {
      const content = parts[index];
      const document = content === undefined ? documents[index - parts.length] : undefined;
      const body = { ...(content !== undefined ? { content } : {}), allowed_mentions: NO_MENTIONS, flags };
      const files: RawFile[] = document ? [{ name: document.filename, data: Buffer.from(document.base64, "base64"), contentType: document.mime }] : [];
      const part = index;
      const wire: Pick<SendTrace, "onWire"> = onPartRequest ? { onWire: (onWire) => onPartRequest(part, onWire) } : {};
      // An edit of the deferred reply may be repeated (the same text again); a follow-up may not.
      const carrying = <T>(request: () => Promise<T>, once: boolean): Promise<T> => (onPartRequest || once ? traceSends({ sent: false, sendOnce: once, ...wire }, request) : request());
      try {
        if (index === 0 && entry.kind === "command" && entry.ephemeral === ephemeral) {
          await carrying(() => rest.patch(Routes.webhookMessage(entry.applicationId, entry.token, "@original"), { body: { content, allowed_mentions: NO_MENTIONS }, auth: false }), false);
        } else {
          if (index === 0 && entry.kind === "command") {
            // "thinking…" was public and the answer is not: it goes, the answer comes privately.
            await rest.delete(Routes.webhookMessage(entry.applicationId, entry.token, "@original"), { auth: false });
          }
          await carrying(() => rest.post(Routes.webhook(entry.applicationId, entry.token), { body, files, auth: false, query: new URLSearchParams({ wait: "true" }) }), true);
        }
      } catch (error) {
        if (error instanceof OutcomeUnknown) {
          // Posted, perhaps, its answer lost: counted as sent (reply-part-unconfirmed), never posted twice — Telegram's rule.
          this.options.logger.warn({ interactionId: entry.id, replyId: reply.replyId, part: index }, "discord follow-up's outcome unknown (posted, perhaps, answer lost); not sent again");
          await onPartSent(index, { last: index === total - 1, unconfirmed: true, boundHere: true });
          continue;
        }
        const failure = toSendError(error, `interaction ${entry.id} reply part ${index + 1}/${total}`);
        const status = (error as { status?: unknown }).status;
        if (status === 401 || status === 404) {
          // The token lapsed or the interaction is gone: the channel takes the rest.
          if (reply.private !== true) this.options.logger.info({ interactionId: entry.id, replyId: reply.replyId, error: failure.message }, "discord interaction no longer answerable; the reply goes to the channel");
          this.forget(entry.id);
          return index;
        }
        throw failure;
      }
      // Only this process knows the interaction: stopping, it sends the rest too (PartSent.boundHere).
      await onPartSent(index, { last: index === total - 1, boundHere: true });
    }
    return total;
  }

  /** A direct answer of the adapter (the submit failed, access refused): ephemeral, to the asker only. */
  async answerPrivately(messageId: string, text: string): Promise<void> {
    const entry = this.open.get(messageId);
    if (!entry) return;
    await entry.acknowledged;
    const ephemeral = MessageFlags.Ephemeral;
    try {
      if (entry.kind === "command" && entry.ephemeral) {
        await this.options.rest.patch(Routes.webhookMessage(entry.applicationId, entry.token, "@original"), { body: { content: text, allowed_mentions: NO_MENTIONS }, auth: false });
      } else {
        if (entry.kind === "command") await this.options.rest.delete(Routes.webhookMessage(entry.applicationId, entry.token, "@original"), { auth: false });
        await this.options.rest.post(Routes.webhook(entry.applicationId, entry.token), { body: { content: text, allowed_mentions: NO_MENTIONS, flags: ephemeral }, auth: false });
      }
    } catch (error) {
      this.options.logger.warn({ interactionId: entry.id, error: toSendError(error, "answer interaction").message }, "interaction answer not sent");
    }
    this.open.delete(messageId);
  }

  /** The interaction no longer carries replies (answered for good, or gone). */
  forget(interactionId: string): void {
    for (const [key, entry] of this.open) if (entry.id === interactionId) this.open.delete(key);
  }
}
