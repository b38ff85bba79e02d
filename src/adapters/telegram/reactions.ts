/**
 * A reaction as acknowledgement (ACK_REACTIONS, issue 30): 👀 on a message once the ingress took
 * it, so the sender sees it arrived before any answer does. Fire and forget, on an Api without
 * auto-retry (a reaction is never worth waiting for); a chat that refuses reactions (disabled,
 * or the emoji not among its allowed ones) is remembered and not asked again.
 */
import { GrammyError, type Api } from "grammy";
import type { ReplyTarget } from "../channel-adapter.js";
import type { Logger } from "../../logger.js";
import { describeError } from "./send-reply.js";

export const ACK_EMOJI = "👀";

export class AckReactions {
  private readonly refused = new Set<string>();

  constructor(private readonly api: Api, private readonly logger: Logger, private readonly track: (call: Promise<unknown>) => void) {}

  acknowledge(target: ReplyTarget, messageId: string): void {
    const id = Number(messageId);
    if (this.refused.has(target.chatId) || !Number.isSafeInteger(id)) return;
    this.track(
      this.api.setMessageReaction(target.chatId, id, [{ type: "emoji", emoji: ACK_EMOJI }]).catch((error: unknown) => {
        if (error instanceof GrammyError && (error.error_code === 400 || error.error_code === 403)) {
          this.refused.add(target.chatId);
          this.logger.info({ chatId: target.chatId, description: error.description }, "telegram chat refuses the acknowledgement reaction; not reacting there any more");
          return;
        }
        this.logger.debug({ chatId: target.chatId, err: describeError(error) }, "acknowledgement reaction not set");
      }),
    );
  }
}
