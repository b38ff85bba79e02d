/**
 * The pairing step of setup: with the configuration just written, the bot's adapters start as
 * the gateway starts them (Telegram polling, the Discord gateway), on the bot's own Redis; the
 * operator writes to the bot, sees their request here and approves it in place (pairing.ts).
 * Logs go to DATA_DIR/logs/setup.log, never to the screen.
 */
import { join } from "node:path";
import { pino } from "pino";
import { configSecrets, type Config } from "../../config/index.js";
import { createDiscordAdapter, createTelegramAdapter, type ChannelAdapter } from "../adapters/index.js";
import { redisLookupOf, resolveRedis } from "../embedded-redis.js";
import { AccessControl, accessListsFrom } from "../gateway/access.js";
import { createLogger } from "../logger.js";
import { createRedis } from "../queue/index.js";
import type { Asker } from "./asker.js";
import { approveInPlace, PairingDesk } from "./pairing.js";

export interface Paired {
  platform: "telegram" | "discord";
  userId: string;
  userName: string;
}

/** → the account approved, or undefined when the operator skipped. */
export async function pairOperator(ask: Asker, config: Config, bots: { telegram?: string; discord?: string }): Promise<Paired | undefined> {
  const logFile = join(config.DATA_DIR, "logs", "setup.log");
  const logger = createLogger({ level: config.LOG_LEVEL, secrets: configSecrets(config), destination: pino.destination({ dest: logFile, mkdir: true, sync: true }) });
  const handle = await resolveRedis({ ...redisLookupOf(config), logger });
  const redis = createRedis(handle.address, { maxRetriesPerRequest: 3 });
  const adapters: ChannelAdapter[] = [];
  try {
    const access = new AccessControl(redis, config.REDIS_PREFIX, accessListsFrom(config));
    const desk = new PairingDesk(access);
    // Polling even where the bot will run on a webhook: setup has no public URL of its own.
    const telegram = createTelegramAdapter({ ...config, TELEGRAM_WEBHOOK_URL: undefined }, logger.child({ platform: "telegram" }));
    const discord = createDiscordAdapter(config, logger.child({ platform: "discord" }));
    for (const adapter of [telegram, discord]) {
      if (!adapter) continue;
      try {
        await adapter.start(desk);
        adapters.push(adapter);
      } catch (error) {
        ask.say(`${adapter.platform}: cannot receive messages now (${error instanceof Error ? error.message : String(error)}); pair later with npm run pairing -- approve CODE`);
      }
    }
    if (adapters.length === 0) return undefined;
    const where = [bots.telegram ? `${bots.telegram} on Telegram` : undefined, bots.discord ? `${bots.discord} on Discord (a direct message)` : undefined].filter(Boolean).join(", or ");
    ask.say(`Now write any message to ${where} from your own account.`);
    for (;;) {
      const candidate = await ask.waitFor("Waiting for your message… (Enter skips pairing)", (signal) => desk.next(signal));
      if (!candidate) return undefined;
      const who = `${candidate.message.userName} (${candidate.message.platform} user ${candidate.message.userId})`;
      if (!candidate.request) {
        ask.say(`${who} can already talk to the bot.`);
        return { platform: candidate.message.platform as Paired["platform"], userId: candidate.message.userId, userName: candidate.message.userName };
      }
      const quoted = candidate.message.text ? ` wrote "${candidate.message.text.slice(0, 60)}"` : " wrote to the bot";
      if (await ask.confirm(`${who}${quoted}. Is this you? Approve it`, true)) {
        const adapter = adapters.find((running) => running.platform === candidate.message.platform);
        const approved = await approveInPlace({ access, logger, adapter }, candidate);
        if (approved) {
          ask.say(`ok    pairing   approved ${who}: they can talk to the bot.`);
          return { platform: approved.platform as Paired["platform"], userId: approved.userId, userName: approved.userName };
        }
        ask.say(`The code of ${who} expired; write to the bot again.`);
      } else {
        ask.say("Not approved (the code stays pending for its hour: npm run pairing -- deny CODE refuses it). Waiting for another message.");
      }
    }
  } finally {
    await Promise.all(adapters.map((adapter) => adapter.stop().catch(() => undefined)));
    await redis.quit().catch(() => redis.disconnect());
    await handle.stop();
    logger.flush();
  }
}
