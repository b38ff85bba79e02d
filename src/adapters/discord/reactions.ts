/**
 * A reaction as acknowledgement (ACK_REACTIONS): 👀 on a message once the ingress took it, fire
 * and forget. In a guild channel the bot's permissions are computed first, by discord.js from
 * the cached guild, roles and overwrites: without Add Reactions and Read Message History no
 * call is made (Discord would answer 403 50013). A channel that refuses it anyway (a stale
 * cache, reactions blocked, no access) is remembered and not asked again.
 */
import { DiscordAPIError, PermissionFlagsBits, type Message } from "discord.js";
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
    if (!mayReact(message)) {
      this.logger.debug({ channelId: message.channelId }, "no Add Reactions or Read Message History permission here; no acknowledgement reaction");
      return;
    }
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

/** The permissions a new reaction needs; true where they cannot be known (a DM, an uncached member). */
export function mayReact(message: Message): boolean {
  if (!message.inGuild()) return true;
  const permissions = message.channel.permissionsFor(message.client.user);
  return permissions === null || permissions.has([PermissionFlagsBits.AddReactions, PermissionFlagsBits.ReadMessageHistory]);
}
