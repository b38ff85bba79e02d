/**
 * `npm run bench -- session-memory`: the Redis memory one heavy session costs after four
 * weeks, built through the store exactly as the worker writes it (appendInbox → beginTurn →
 * endTurn, one turn per message). "Heavy": 200 messages a day for 28 days, a third of the
 * turns calling a tool with a 2 KB output, answers of ~600 characters, the live context kept
 * at ~60,000 tokens as compaction keeps it. Memory is Redis's own MEMORY USAGE per key; dedupe
 * ids live 7 days, so only the last week's are counted as the steady state.
 *
 *   npx tsx bench/session-memory.ts [days] [messages-per-day]
 */
import type { ChatMessage } from "../src/core/messages.js";
import { DEDUPE_TTL_SECONDS, SessionStore } from "../src/session/store.js";
import { inbound } from "../test/helpers/recording-adapter.js";
import { claimed } from "../test/helpers/session.js";
import { isMain, table } from "./stats.js";
import { LIVE_CHARS, withPrivateRedis, words } from "./store-session.js";

const SESSION = "tg:5012345678";

export async function main(args: string[] = []): Promise<string> {
  const days = Number(args[0] ?? 28);
  const perDay = Number(args[1] ?? 200);
  return withPrivateRedis({}, async (redis) => {
    const prefix = "mem";
    const store = new SessionStore(redis, prefix);
    let live: ChatMessage[] = [];
    let liveChars = 0;
    let seq = 0;
    const total = days * perDay;
    for (let turn = 0; turn < total; turn++) {
      await store.appendInbox(inbound({ platform: "telegram", chatId: "5012345678", sessionKey: SESSION, messageId: String(10_000 + turn), text: words(turn, 160) }), Date.now());
      const begun = claimed(await store.beginTurn(SESSION, `bench-${turn}`, { leaseMs: 60_000, mode: "all" }));
      const added: ChatMessage[] = [{ id: `m${++seq}`, role: "user", content: begun.batch.map((entry) => entry.text).join("\n"), at: Date.now() }];
      if (turn % 3 === 0) {
        const callId = `call_${turn}`;
        added.push({ id: `m${++seq}`, role: "assistant", content: null, tool_calls: [{ id: callId, type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: `src/file${turn}.ts` }) } }] });
        added.push({ id: `m${++seq}`, role: "tool", tool_call_id: callId, content: words(turn * 3, 2_000) });
      }
      added.push({ id: `m${++seq}`, role: "assistant", content: words(turn * 5, 600) });
      live.push(...added);
      liveChars += added.reduce((sum, message) => sum + (message.content?.length ?? 0), 0);
      // Compaction: the oldest messages leave the live context (a summary takes their place).
      while (liveChars > LIVE_CHARS && live.length > 1) liveChars -= live.shift()?.content?.length ?? 0;
      const state = { ...begun.state, nextSeq: seq + 1, live };
      const ended = await store.endTurn(SESSION, begun.claim, { state, transcript: added, outbox: [] });
      if (ended.status !== "committed") throw new Error(`turn ${turn}: ${ended.status}`);
    }
    const keys = store.keys(SESSION);
    const usage = async (key: string) => Number((await redis.call("MEMORY", "USAGE", key, "SAMPLES", "0")) ?? 0);
    const seenKeys = await redis.keys(`${prefix}:{${SESSION}}:seen:*`);
    let seenBytes = 0;
    for (const key of seenKeys) seenBytes += await usage(key);
    // Dedupe ids expire after DEDUPE_TTL_SECONDS: at steady state only that many days' worth exist.
    const seenDays = Math.min(days, DEDUPE_TTL_SECONDS / 86_400);
    const seenSteady = (seenBytes / seenKeys.length) * perDay * seenDays;
    const rows: Array<[string, number, number]> = [
      ["transcript (list)", await redis.llen(keys.transcript), await usage(keys.transcript)],
      ["transcript index (hash)", await redis.hlen(keys.transcriptIndex), await usage(keys.transcriptIndex)],
      ["live state (string)", 1, await usage(keys.state)],
      [`dedupe ids (${seenDays} days alive)`, perDay * seenDays, seenSteady],
    ];
    const totalBytes = rows.reduce((sum, row) => sum + row[2], 0);
    const mb = (bytes: number) => `${(bytes / 1_048_576).toFixed(2)} MB`;
    return [
      `One heavy session after ${days} days (${total} messages, ${seq} transcript entries):`,
      "",
      table(["key", "entries", "memory"], [...rows.map(([name, entries, bytes]) => [name, entries, mb(bytes)]), ["total", "", mb(totalBytes)]]),
      "",
      `Per message: ${(totalBytes / total / 1024).toFixed(1)} KB. Archived (/new) transcripts cost what the transcript and its index cost, for ARCHIVE_RETENTION_DAYS.`,
    ].join("\n");
  });
}

if (isMain(import.meta.url)) console.log(await main(process.argv.slice(2)));
