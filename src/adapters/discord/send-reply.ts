import { createHash } from "node:crypto";
import { DiscordAPIError, DiscordjsError, HTTPError, type MessageCreateOptions, type SendableChannels } from "discord.js";
import { PermanentError, RetryableError, errorMessage } from "../../errors.js";
import type { PartSent } from "../channel-adapter.js";

/**
 * Sends the parts of one reply to a channel, in order. Rate limits are @discordjs/rest's job:
 * it queues per route bucket (so one busy channel never holds up another) and retries 429s
 * after the time Discord asks for; 5xx and network errors are retried three times there too.
 */

/** Model output must never ping: no @everyone/@here, roles or users, not even the replied-to user. */
export const NO_MENTIONS = { parse: [], repliedUser: false } as const satisfies MessageCreateOptions["allowedMentions"];
/** The one ping allowed (DISCORD_PING_ON_REPLY, guilds only): the person the reply answers. */
const PING_REPLIED_USER = { parse: [], repliedUser: true } as const satisfies MessageCreateOptions["allowedMentions"];

export interface SendPartsOptions {
  /** The first part replies to this message; later parts are plain channel messages. */
  replyToMessageId?: string | undefined;
  /** Whether that reply pings its author (never anyone else). @defaultValue false */
  pingRepliedUser?: boolean | undefined;
  /** Parts before this index were delivered earlier and are skipped. */
  fromPart: number;
  /** Called after each part is delivered, with its index; `last`: the last of `parts`. */
  onPartSent?: ((partIndex: number, sent: PartSent) => Promise<void>) | undefined;
  /** Stable id of what is being sent (the reply id); seeds each part's nonce. */
  nonceKey: string;
  /** Told before the request carrying part `partIndex` (with its nonce) goes out (SendOptions.onNoncedPart). */
  onNoncedPart?: ((partIndex: number) => void) | undefined;
  /** Extra options of the last part (buttons). */
  lastPart?: Pick<MessageCreateOptions, "components"> | undefined;
}

export async function sendParts(channel: SendableChannels, parts: readonly string[], options: SendPartsOptions): Promise<void> {
  for (const [index, content] of parts.entries()) {
    if (index < options.fromPart) continue;
    const replyTo = index === 0 ? options.replyToMessageId : undefined;
    const isReply = replyTo !== undefined;
    const reply = isReply ? { reply: { messageReference: replyTo, failIfNotExists: false } } : {};
    options.onNoncedPart?.(index);
    try {
      await channel.send({
        content,
        allowedMentions: isReply && options.pingRepliedUser === true ? PING_REPLIED_USER : NO_MENTIONS,
        // With enforce_nonce Discord returns the message it already created for this nonce
        // (within a few minutes) instead of posting it again: a send whose response was lost
        // and is then retried does not show the part twice.
        nonce: partNonce(options.nonceKey, index),
        enforceNonce: true,
        ...reply,
        ...(index === parts.length - 1 ? options.lastPart : {}),
      });
    } catch (error) {
      throw toSendError(error, `send part ${index + 1}/${parts.length} to channel ${channel.id}`);
    }
    await options.onPartSent?.(index, { last: index === parts.length - 1 });
  }
}

/** Discord nonces are at most 25 characters: a digest of the key and the part index. */
export function partNonce(key: string, partIndex: number): string {
  return createHash("sha256").update(`${key}#${partIndex}`).digest("base64url").slice(0, 25);
}

/**
 * Maps a discord.js failure to what the reply sender must do. Discord's 4xx answers (missing
 * access, unknown channel, invalid body) will not change on a retry; 5xx answers and network
 * failures left over after @discordjs/rest's own retries may.
 */
export function toSendError(error: unknown, action: string): Error {
  // Already says what to do (the send budget's refusal carries its wait).
  if (error instanceof RetryableError || error instanceof PermanentError) return error;
  if (error instanceof DiscordAPIError || error instanceof HTTPError) {
    const code = error instanceof DiscordAPIError ? ` code ${error.code}` : "";
    const message = `${action}: Discord answered ${error.status}${code}: ${error.message}`;
    return error.status >= 500 || error.status === 429
      ? new RetryableError(message, { cause: error })
      : new PermanentError(message, { cause: error });
  }
  // discord.js' own errors are about the request itself (a channel that cannot take messages).
  if (error instanceof DiscordjsError) return new PermanentError(`${action}: ${error.message}`, { cause: error });
  return new RetryableError(`${action}: ${errorMessage(error)}`, { cause: error });
}
