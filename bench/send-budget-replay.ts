/**
 * The bot's send budget alone under the load bench's traffic (issue 32): `npx tsx
 * bench/send-budget-replay.ts [--platform=discord|telegram] [--rate=25] [--seconds=30]`.
 *
 * bench/load.ts measures everything at once, on a machine whose CPU the figures depend on. This
 * replays only what the gateway asks of the budget for the same messages (bench/load.ts's
 * messageOf: the same users, tool steps and model times), in real time, against the real Lua
 * script (src/gateway/send-budget.ts) on a private redis-server, with the adapters' real bucket
 * policies: per message a typing call at TYPING_DELAY_MS (500 ms), a status (preview) from
 * STREAMING_DELAY_MS (1 s) on — tried again after the budget's wait or the preview interval,
 * whichever is longer, until the answer is ready — then the final when the model is done (it
 * borrows its slot and waits for it), and on Discord the status's deletion after the final (a
 * final's priority, the global bucket). Nothing else runs, so the wait it reports is the
 * budget's own: the finals' wait for their slot (p50 / p99 / max), the statuses that went, and
 * the most requests sent in any one second.
 */
import { discordBuckets } from "../src/adapters/discord/send-budget.js";
import { DEFAULT_TELEGRAM_SEND_LIMITS, telegramBuckets } from "../src/adapters/telegram/send-budget.js";
import type { SendPriority, SendRequest } from "../src/core/send-budget.js";
import { RedisSendBudget } from "../src/gateway/send-budget.js";
import { silentLogger } from "../src/logger.js";
import { createRedis } from "../src/queue/index.js";
import { startRedisServer } from "../test/helpers/redis-server.js";
import { messageOf, modelTimeMs, parsePlan, random } from "./load.js";
import { isMain, percentile, table } from "./stats.js";

const DISCORD_PER_SECOND = 45;
const TYPING_DELAY_MS = 500;
const STREAMING_DELAY_MS = 1_000;
/** DISCORD_PREVIEW_INTERVAL_MS; Telegram's private chats: about one a second. */
const PREVIEW_INTERVAL_MS = { discord: 1_500, telegram: 1_000 } as const;

export interface ReplayResult {
  platform: "discord" | "telegram";
  rate: number;
  finalWaits: number[];
  statuses: number;
  typing: number;
  busiestSecond: number;
  requests: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** The most of `times` (ms, any order) in any window of 1,000 ms. */
export function busiestSecond(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let start = 0, end = 0; end < sorted.length; end++) {
    while (sorted[end]! - sorted[start]! >= 1_000) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

export async function replay(platform: "discord" | "telegram", rate: number, seconds: number, redisUrl: string): Promise<ReplayResult> {
  const redis = createRedis(redisUrl);
  const budget = new RedisSendBudget({ redis, prefix: `replay-${platform}-${Date.now().toString(36)}`, logger: silentLogger });
  const plan = parsePlan([`--rates=${rate}`, `--seconds=${seconds}`]);
  const draw = random(20261206 + rate);
  const sent: number[] = [];
  const finalWaits: number[] = [];
  let statuses = 0;
  let typing = 0;
  const request = (chat: string, path: string, method: string, priority: SendPriority): SendRequest => ({
    platform, bot: "replay", chat, priority,
    buckets: platform === "discord" ? discordBuckets(path, method, DISCORD_PER_SECOND) : telegramBuckets(chat, method === "typing" ? "sendChatAction" : "sendMessage", DEFAULT_TELEGRAM_SEND_LIMITS),
  });
  /** One call at its priority: → whether it went (after its slot's delay). Finals and deletions wait as long as it takes. */
  const call = async (chat: string, path: string, method: string, priority: SendPriority): Promise<boolean> => {
    for (;;) {
      const grant = await budget.take(request(chat, path, method, priority));
      if (grant.granted) {
        await sleep(grant.delayMs);
        sent.push(Date.now());
        return true;
      }
      if (priority !== "final") return false;
      await sleep(grant.waitMs);
    }
  };
  const one = async (user: number, modelMs: number) => {
    const chat = String(310_000_000_000_000_000n + BigInt(user));
    const path = `/channels/${chat}/messages`;
    const started = Date.now();
    const modelDone = started + modelMs;
    let status = false;
    const typingCall = (async () => {
      await sleep(TYPING_DELAY_MS);
      if (await call(chat, `/channels/${chat}/typing`, platform === "discord" ? "POST" : "typing", "typing")) typing++;
    })();
    const previews = (async () => {
      let next = started + STREAMING_DELAY_MS;
      while (!status && next < modelDone) {
        await sleep(next - Date.now());
        const grant = await budget.take(request(chat, path, "POST", "preview"));
        if (grant.granted) {
          await sleep(grant.delayMs);
          sent.push(Date.now());
          status = true;
          statuses++;
          return;
        }
        next = Date.now() + Math.max(grant.waitMs, PREVIEW_INTERVAL_MS[platform]);
      }
    })();
    await sleep(modelDone - Date.now());
    await call(chat, path, "POST", "final");
    finalWaits.push(Date.now() - modelDone);
    // On Discord the status is deleted after the final: a request the bot's limit counts.
    if (status && platform === "discord") await call(chat, `${path}/1`, "DELETE", "final");
    await Promise.all([typingCall, previews]);
  };
  const started = Date.now();
  const all: Array<Promise<void>> = [];
  for (let index = 0; index < rate * seconds; index++) {
    await sleep(started + (index * 1_000) / rate - Date.now());
    const message = messageOf(index, plan, draw);
    all.push(one(message.user, modelTimeMs(plan, message.tools)));
  }
  await Promise.all(all);
  redis.disconnect();
  return { platform, rate, finalWaits: finalWaits.sort((a, b) => a - b), statuses, typing, busiestSecond: busiestSecond(sent), requests: sent.length };
}

export async function main(args: string[] = process.argv.slice(2)): Promise<string> {
  const flag = (name: string, fallback: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
  const platforms = flag("platform", "discord,telegram").split(",") as Array<"discord" | "telegram">;
  const rate = Number(flag("rate", "25"));
  const seconds = Number(flag("seconds", "30"));
  const redis = await startRedisServer();
  try {
    const rows: Array<Array<string | number>> = [];
    for (const platform of platforms) {
      const result = await replay(platform, rate, seconds, redis.url);
      const ms = (p: number) => Math.round(percentile(result.finalWaits, p));
      rows.push([platform, rate, result.finalWaits.length, `${ms(50)} / ${ms(99)} / ${Math.round(result.finalWaits.at(-1) ?? 0)}`, result.statuses, result.typing, result.requests, result.busiestSecond]);
    }
    const output = table(["platform", "messages /s", "finals", "final's wait for its slot p50 / p99 / max ms", "statuses sent", "typing calls sent", "requests", "most in any second"], rows);
    console.log(output);
    return output;
  } finally {
    await redis.dispose();
  }
}

if (isMain(import.meta.url)) await main();
