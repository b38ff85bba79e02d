/**
 * A reaction as acknowledgement (ACK_REACTIONS, issue 30): 👀 on a message once the ingress took
 * it, so the sender sees it arrived before any answer does. Fire and forget, on an Api without
 * auto-retry (a reaction is never worth waiting for).
 *
 * A group's admins choose which reactions it allows (`available_reactions` of getChat: omitted,
 * all of them; empty, none), so before the first reaction in a group the adapter asks getChat and
 * reacts only where 👀 is allowed: a chat that forbids it gets no failing call. What a chat allows
 * is kept per chat (at most `capacity` chats) and asked again after `refreshMs`; one question
 * at a time per chat. A private chat allows every reaction and is never asked. A chat that still
 * refuses the reaction (its admins changed the list since) is remembered like one that forbids
 * it, with one log line, until the next refresh.
 */
import { GrammyError, type Api } from "grammy";
import type { ReplyTarget } from "../channel-adapter.js";
import type { Logger } from "../../logger.js";
import { describeError } from "./send-reply.js";

export const ACK_EMOJI = "👀";

export interface AckReactionsOptions {
  /** What a chat allows is asked again after this long. @defaultValue 3600000 (an hour) */
  refreshMs?: number;
  /** Chats whose answer is kept; the oldest is forgotten past it. @defaultValue 10000 */
  capacity?: number;
  now?: () => number;
}

interface Known {
  allowed: boolean;
  at: number;
}

export class AckReactions {
  private readonly known = new Map<string, Known>();
  private readonly asking = new Map<string, Promise<boolean>>();
  private readonly refreshMs: number;
  private readonly capacity: number;
  private readonly now: () => number;

  constructor(private readonly api: Api, private readonly logger: Logger, private readonly track: (call: Promise<unknown>) => void, options: AckReactionsOptions = {}) {
    this.refreshMs = options.refreshMs ?? 3_600_000;
    this.capacity = options.capacity ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  acknowledge(target: ReplyTarget, messageId: string): void {
    const id = Number(messageId);
    if (!Number.isSafeInteger(id)) return;
    const chatId = target.chatId;
    const known = this.known.get(chatId);
    if (known && !known.allowed && this.now() - known.at < this.refreshMs) return;
    this.track(
      this.allows(chatId).then((allowed) => {
        if (!allowed) return;
        return this.api.setMessageReaction(chatId, id, [{ type: "emoji", emoji: ACK_EMOJI }]).then(() => undefined, (error: unknown) => {
          if (error instanceof GrammyError && (error.error_code === 400 || error.error_code === 403)) {
            this.remember(chatId, false);
            this.logger.info({ chatId, description: error.description }, "telegram chat refuses the acknowledgement reaction; not reacting there any more");
            return;
          }
          this.logger.debug({ chatId, err: describeError(error) }, "acknowledgement reaction not set");
        });
      }),
    );
  }

  /** Whether the chat allows 👀: a private chat always; a group as its getChat says (kept for refreshMs). */
  private allows(chatId: string): Promise<boolean> {
    if (/^\d+$/.test(chatId)) return Promise.resolve(true);
    const known = this.known.get(chatId);
    if (known && this.now() - known.at < this.refreshMs) return Promise.resolve(known.allowed);
    const pending = this.asking.get(chatId);
    if (pending) return pending;
    const asked = this.api.getChat(chatId).then(
      (chat) => {
        const available = chat.available_reactions;
        const allowed = available === undefined || available.some((reaction) => reaction.type === "emoji" && reaction.emoji === ACK_EMOJI);
        this.remember(chatId, allowed);
        if (!allowed) this.logger.info({ chatId }, "telegram chat does not allow the acknowledgement reaction; not reacting there");
        return allowed;
      },
      (error: unknown) => {
        // The bot cannot read the chat (removed, no access): no reaction either, asked again after the refresh.
        if (error instanceof GrammyError && (error.error_code === 400 || error.error_code === 403)) this.remember(chatId, false);
        this.logger.debug({ chatId, err: describeError(error) }, "telegram getChat failed; no acknowledgement reaction");
        return false;
      },
    );
    this.asking.set(chatId, asked);
    void asked.finally(() => this.asking.delete(chatId));
    return asked;
  }

  private remember(chatId: string, allowed: boolean): void {
    this.known.delete(chatId);
    this.known.set(chatId, { allowed, at: this.now() });
    if (this.known.size > this.capacity) this.known.delete(this.known.keys().next().value as string);
  }
}
