/**
 * Telegram intake throughput: how fast updates reach the ingress with long polling, when each
 * submit takes a while (a Redis round trip, a slow moment). Ours (`polling.ts`: confirms a
 * batch only once stored, chats side by side, each chat in order) against grammY's plain
 * `bot.start()` in the same run (also at-least-once, but one update at a time). 50 chats × 20
 * updates, queued before the poller starts; the fake Bot API has no rate limits here.
 *
 *   npm run bench -- telegram-polling
 */
import { Bot } from "grammy";
import type { IngressPort, SubmitResult } from "../src/adapters/channel-adapter.js";
import { TelegramAdapter } from "../src/adapters/telegram/index.js";
import { silentLogger } from "../src/logger.js";
import { FAKE_BOT, FAKE_TOKEN, FakeTelegram } from "../test/fakes/fake-telegram.js";
import { isMain, median, table } from "./stats.js";

const CHATS = 50;
const PER_CHAT = 20;
const ROUNDS = 3;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function queued(): Promise<FakeTelegram> {
  const fake = await FakeTelegram.start({ rateLimits: false });
  for (let index = 0; index < PER_CHAT; index++) {
    for (let chat = 1; chat <= CHATS; chat++) fake.pushMessage({ chat: { id: chat, type: "private", first_name: "U" }, from: { id: chat, is_bot: false, first_name: "U" }, text: `m${index}` });
  }
  await sleep(10);
  return fake;
}

async function ours(submitMs: number): Promise<number> {
  const fake = await queued();
  let count = 0;
  let done: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const ingress: IngressPort = {
    async submit(): Promise<SubmitResult> {
      await sleep(submitMs);
      if (++count === CHATS * PER_CHAT) done();
      return { status: "accepted" };
    },
  };
  const adapter = new TelegramAdapter({ token: FAKE_TOKEN, apiRoot: fake.apiRoot, maxMessageChars: 16_000, logger: silentLogger, botInfo: FAKE_BOT, pollingTimeoutSeconds: 1 });
  const started = performance.now();
  await adapter.start(ingress);
  await finished;
  const elapsed = performance.now() - started;
  await adapter.stop();
  await fake.close();
  return elapsed;
}

async function plainLongPolling(submitMs: number): Promise<number> {
  const fake = await queued();
  let count = 0;
  let done: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const bot = new Bot(FAKE_TOKEN, { botInfo: FAKE_BOT, client: { apiRoot: fake.apiRoot } });
  bot.on("message", async () => {
    await sleep(submitMs);
    if (++count === CHATS * PER_CHAT) done();
  });
  const started = performance.now();
  void bot.start({ timeout: 1, drop_pending_updates: false });
  await finished;
  const elapsed = performance.now() - started;
  await bot.stop();
  await fake.close();
  return elapsed;
}

export async function main(): Promise<string> {
  const rows: Array<Array<string | number>> = [];
  for (const submitMs of [0, 2, 10]) {
    const oursMs: number[] = [];
    const plainMs: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      oursMs.push(await ours(submitMs));
      plainMs.push(await plainLongPolling(submitMs));
    }
    const total = CHATS * PER_CHAT;
    const oursRate = total / (median(oursMs) / 1000);
    const plainRate = total / (median(plainMs) / 1000);
    rows.push([`${submitMs} ms`, Math.round(oursRate), Math.round(plainRate), `${(oursRate / plainRate).toFixed(1)}×`]);
  }
  return [
    `${CHATS} chats × ${PER_CHAT} updates, median of ${ROUNDS} runs; updates/s until every update reached the ingress`,
    "",
    table(["submit takes", "ours (updates/s)", "bot.start() (updates/s)", "ratio"], rows),
  ].join("\n");
}

if (isMain(import.meta.url)) console.log(await main());
