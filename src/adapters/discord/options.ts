/**
 * What the Discord adapter is built from (create-adapter.ts maps the configuration onto it),
 * and the two facts about a bot token and a gateway close it needs: the bot's id for the send
 * budget (never the token) and what to tell the operator when the gateway gives up.
 */
import { createHash } from "node:crypto";
import type { Logger } from "../../logger.js";
import type { BackfillLimits } from "./backfill.js";

export interface DiscordAdapterOptions {
  /** Bot token (DISCORD_BOT_TOKEN). Never logged. */
  token: string;
  /** REST root; the gateway URL comes from its `/gateway/bot`. @defaultValue "https://discord.com/api" */
  apiRoot?: string;
  /** Channel ids answered without a mention (DISCORD_ALWAYS_ON_CHANNELS); threads inherit. @defaultValue [] */
  alwaysOnChannels?: readonly string[];
  /**
   * Channels caught up after a reconnect, with their threads (ALLOWED_DISCORD_CHANNELS and the
   * always-on ones); DMs are caught up regardless. @defaultValue alwaysOnChannels
   */
  backfillChannels?: readonly string[];
  /** Longer inbound text is truncated with a notice (MAX_MESSAGE_CHARS). @defaultValue 16000 */
  maxMessageChars?: number;
  /** In guild channels the reply pings the person who asked (DISCORD_PING_ON_REPLY); never in DMs. @defaultValue true */
  pingOnReply?: boolean;
  /** React 👀 to a message once the ingress took it (ACK_REACTIONS). @defaultValue false */
  ackReactions?: boolean;
  /** Register the command registry as global slash commands at start, by difference (docs/discord.md). @defaultValue true */
  slashCommands?: boolean;
  /** @defaultValue silentLogger */
  logger?: Logger;
  /** Discord shows "typing" for 10 s per call; refresh before it lapses. @defaultValue 8000 */
  typingIntervalMs?: number;
  /** Stop typing anyway after this long, in case turn-finished never comes. @defaultValue 600000 */
  typingTimeoutMs?: number;
  /**
   * Pauses between attempts when the ingress throws. The gateway never redelivers a message,
   * so a failed submit is retried here before the user is asked to send it again.
   * @defaultValue [250, 1000, 4000]
   */
  submitRetryDelaysMs?: readonly number[];
  /** A text attachment (a long paste's message.txt) must be downloaded within this. @defaultValue 10000 */
  textFileTimeoutMs?: number;
  /** Deadline of one ingress attempt (a store that never answers is logged and retried). @defaultValue 10000 */
  submitAttemptTimeoutMs?: number;
  /** @defaultValue DEFAULT_BACKFILL_LIMITS (6 h, 100 per channel, DMs of the last 7 days, 100 of them) */
  backfillLimits?: Partial<BackfillLimits>;
  /** A message that is only a Tenor or GIPHY link waits this long for Discord's gifv embed (gifs.ts). @defaultValue 3000 */
  gifEmbedWaitMs?: number;
  /** Live messages wait at most this long behind a backfill before going ahead anyway. @defaultValue 30000 */
  backfillHoldMs?: number;
  /** The send budget's size: the bot's REST requests in any second (DISCORD_REQUESTS_PER_SECOND). @defaultValue 45 */
  requestsPerSecond?: number;
}

/**
 * The bot's id for its send budget: a Discord token starts with the bot's user id in base64;
 * anything else is named by a digest. Never the token itself.
 */
export function budgetIdOf(token: string): string {
  const id = Buffer.from(token.split(".")[0] ?? "", "base64").toString("utf8");
  return /^\d{5,25}$/.test(id) ? id : createHash("sha256").update(token).digest("hex").slice(0, 16);
}

/** Gateway close codes after which discord.js gives up, with what the operator must fix. */
export const CLOSE_HINTS: Record<number, string> = {
  4004: "the bot token was rejected: check DISCORD_BOT_TOKEN",
  4010: "invalid shard: check the shard settings",
  4011: "sharding required: the bot is in too many servers (2,500+) for one gateway connection; run it with several shards",
  4012: "invalid API version: update discord.js",
  4013: "invalid intents",
  4014: "disallowed intents: enable the Message Content intent for the bot in the Discord Developer Portal (Bot → Privileged Gateway Intents)",
};
