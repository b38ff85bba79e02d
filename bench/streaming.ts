/**
 * Streaming (issue 15): time to the first visible update, and messages, edits, deletes and
 * notifying messages per reply (issue 30: the status is silent, the answer notifies) for a
 * 2,000-token answer streamed at 50 tokens/s, per mode (off is the baseline: the first thing
 * the user sees is the answer itself). The real pipeline in this process (Telegram adapter,
 * gateway with its preview renderer, worker, BullMQ on a private redis-server) against the fake
 * Bot API with Telegram's flood limits on and the fake LLM. One deployment per mode, run side by
 * side, each answering `CHATS` private chats at once (same limits per chat as alone).
 *
 *   npm run bench -- streaming
 */
import { loadConfig } from "../config/index.js";
import { createTelegramAdapter } from "../src/adapters/telegram/index.js";
import { startGateway } from "../src/gateway/gateway.js";
import { silentLogger } from "../src/logger.js";
import { createMetrics } from "../src/metrics.js";
import { startWorkerRole } from "../workers/worker-role.js";
import { FakeTelegram } from "../test/fakes/fake-telegram.js";
import { startFakeLlm, type FakeLlm } from "../test/fakes/fake-llm.js";
import { startRedisServer } from "../test/helpers/redis-server.js";
import { isMain, median, table } from "./stats.js";

const TOKENS = 2_000;
const TOKENS_PER_SECOND = 50;
const CHATS = 3;
const MODES = ["off", "progress", "partial"] as const;
const TOKEN = "123456:BENCH-token";

/** 2,000 chunks as the fake LLM streams them: a 3-letter word each (" abc" is one chunk). */
const answer = Array.from({ length: TOKENS }, (_, index) => `${String.fromCharCode(97 + (index % 26))}${String.fromCharCode(97 + (Math.floor(index / 26) % 26))}x`).join(" ");

interface Measured { firstVisibleMs: number; finalMs: number; messages: number; edits: number; deletes: number; notified: number; rateLimited: number }

async function runMode(mode: (typeof MODES)[number], redisUrl: string, llm: FakeLlm): Promise<Measured[]> {
  const telegram = await FakeTelegram.start({ token: TOKEN });
  const chatIds = Array.from({ length: CHATS }, (_, index) => 5_000_000_000 + index);
  const config = loadConfig({
    REDIS_URL: redisUrl, REDIS_PREFIX: `bench-stream-${mode}`, LLM_BASE_URL: llm.url, LLM_API_KEY: "bench", LLM_TIMEOUT_MS: "120000",
    TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: telegram.apiRoot, ALLOWED_TELEGRAM_USERS: chatIds.join(","),
    STREAMING: mode, HTTP_PORT: "0", CONSOLE: "off", LOG_LEVEL: "silent", RATE_LIMIT_PER_MINUTE: "0",
  });
  const adapter = createTelegramAdapter(config, silentLogger, { pollingTimeoutSeconds: 1 })!;
  const worker = await startWorkerRole({ config, redisAddress: redisUrl, logger: silentLogger, metrics: createMetrics() });
  const gateway = await startGateway({ config, redisAddress: redisUrl, adapters: [adapter], logger: silentLogger, metrics: createMetrics() });
  try {
    const pushedAt = new Map<number, number>();
    for (const chatId of chatIds) {
      telegram.pushMessage({ chat: { id: chatId, type: "private", first_name: "B" }, from: { id: chatId, is_bot: false, first_name: "B" }, text: `bench ${mode}` });
      pushedAt.set(chatId, Date.now());
    }
    const squash = (text: string) => text.replace(/\s+/g, "");
    const done = (chatId: number) => squash(telegram.chatView(chatId).map((message) => message.text).join("")) === squash(answer);
    const finalAt = new Map<number, number>();
    while (finalAt.size < chatIds.length) {
      for (const chatId of chatIds) if (!finalAt.has(chatId) && done(chatId)) finalAt.set(chatId, Date.now());
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return chatIds.map((chatId) => {
      const inChat = telegram.calls.filter((call) => String(call.payload.chat_id) === String(chatId) && call.visible);
      const first = inChat.find((call) => call.method === "sendMessage");
      return {
        firstVisibleMs: (first?.at ?? Number.NaN) - pushedAt.get(chatId)!,
        finalMs: finalAt.get(chatId)! - pushedAt.get(chatId)!,
        messages: inChat.filter((call) => call.method === "sendMessage").length,
        edits: inChat.filter((call) => call.method === "editMessageText").length,
        deletes: telegram.calls.filter((call) => call.method === "deleteMessage" && String(call.payload.chat_id) === String(chatId)).length,
        notified: telegram.notifications(chatId).length,
        rateLimited: gateway.previews.stats.rateLimited,
      };
    });
  } finally {
    await gateway.stopIntake();
    await worker.close();
    await gateway.close();
    await telegram.close();
  }
}

export async function main(): Promise<string> {
  const redis = await startRedisServer();
  const llm = await startFakeLlm();
  // Streamed: paced chunk by chunk; not streamed (off): the whole answer after the same generation time.
  llm.setHandler((request) => (request.body.stream === true ? { text: answer, tokensPerSecond: TOKENS_PER_SECOND } : { text: answer, delayMs: (TOKENS / TOKENS_PER_SECOND) * 1000 }));
  try {
    const results = await Promise.all(MODES.map((mode) => runMode(mode, redis.url, llm)));
    const baseline = median(results[0]!.map((result) => result.firstVisibleMs));
    const rows = MODES.map((mode, index) => {
      const runs = results[index]!;
      const first = median(runs.map((result) => result.firstVisibleMs));
      return [
        mode,
        Math.round(first),
        (first / baseline).toFixed(3),
        Math.round(median(runs.map((result) => result.finalMs))),
        median(runs.map((result) => result.messages)),
        median(runs.map((result) => result.edits)),
        median(runs.map((result) => result.deletes)),
        median(runs.map((result) => result.notified)),
        runs[0]!.rateLimited,
      ];
    });
    const report = [
      `${TOKENS}-token answer (${answer.length} characters: ${Math.ceil(answer.length / 4096)} Telegram messages) at ${TOKENS_PER_SECOND} tokens/s, ${CHATS} private chats per mode at once, medians:`,
      "",
      table(["mode", "first visible update (ms)", "vs off", "final complete (ms)", "messages sent", "edits", "deletes", "notifying messages", "preview 429s (all chats)"], rows),
    ].join("\n");
    console.log(report);
    return report;
  } finally {
    await llm.close();
    await redis.dispose();
  }
}

if (isMain(import.meta.url)) await main();
