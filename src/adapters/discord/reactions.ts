/**
 * A reaction as acknowledgement (ACK_REACTIONS): 👀 on a message once the ingress took it, fire
 * and forget. A channel that refuses it (no Add Reactions permission, reactions blocked, no
 * access) is remembered and not asked again.
 */
import { DiscordAPIError, type Message } from "discord.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";

/** The acknowledgement reaction (ACK_REACTIONS). */
export const ACK_EMOJI = "👀";

export class AckReactions {
  /** Channels that refused the acknowledgement reaction. */
  private readonly refused = new Set<string>();

  constructor(private readonly logger: Logger) {}

  acknowledge(message: Message): void {
    if (this.refused.has(message.channelId)) return;
    message.react(ACK_EMOJI).catch((error: unknown) => {
      if (error instanceof DiscordAPIError && error.status >= 400 && error.status < 500 && error.status !== 429) {
        this.refused.add(message.channelId);
        this.logger.info({ channelId: message.channelId, code: error.code }, "discord channel refuses the acknowledgement reaction; not reacting there any more");
        return;
      }
      this.logger.debug({ channelId: message.channelId, error: errorMessage(error) }, "acknowledgement reaction not added");
    });
  }
}
