/**
 * `npm run bench -- turn-bytes`: bytes Redis writes (its AOF, appendfsync always) and receives
 * (total_net_input_bytes) per turn, for a new session and for a four-week one whose live context
 * is at the size compaction keeps it (~60,000 tokens, ~240,000 characters). Turns go through
 * the store as the worker commits them (appendInbox → beginTurn → endTurn), each adding a user
 * message and a 600-character answer. Uses only the store's public calls, so the same file (with
 * store-session.ts) measures an older build (docs/benchmarks.md, before/after).
 *
 *   npx tsx bench/turn-bytes.ts [turns=20]
 */
import type { ChatMessage } from "../src/core/messages.js";
import { SessionStore } from "../src/session/store.js";
import { inbound } from "../test/helpers/recording-adapter.js";
import { claimed } from "../test/helpers/session.js";
import { isMain, median, table } from "./stats.js";
import { LIVE_CHARS, withPrivateRedis, words } from "./store-session.js";

export async function main(args: string[] = []): Promise<string> {
  const turns = Number(args[0] ?? 20);
  return withPrivateRedis({ appendOnly: true }, async (redis) => {
    const stat = async (section: string, field: string) => Number(new RegExp(`${field}:(\\d+)`).exec(await redis.info(section))?.[1]);
    const store = new SessionStore(redis, "bytes");
    const rows: Array<Array<string | number>> = [];
    for (const [label, liveChars] of [["new session", 0], ["four weeks (live context ~240,000 chars)", LIVE_CHARS]] as const) {
      const sessionKey = liveChars === 0 ? "tg:1000000001" : "tg:1000000002";
      let seq = 0;
      // The session as it stands: its live context in one commit.
      await store.appendInbox(inbound({ platform: "telegram", chatId: sessionKey.slice(3), sessionKey, messageId: "seed", text: "seed" }), Date.now());
      const seed = claimed(await store.beginTurn(sessionKey, "seed", { leaseMs: 60_000, mode: "all" }));
      const live: ChatMessage[] = [{ id: `m${++seq}`, at: 0, role: "system", content: words(0, 2_000) }];
      for (let chars = 0; chars < liveChars; chars += 800) {
        live.push({ id: `m${++seq}`, at: 0, role: "user", content: words(seq, 200) }, { id: `m${++seq}`, at: 0, role: "assistant", content: words(seq, 600) });
      }
      await store.endTurn(sessionKey, seed.claim, { state: { ...seed.state, nextSeq: seq + 1, live }, transcript: live, outbox: [] });
      const aof: number[] = [];
      const input: number[] = [];
      for (let turn = 0; turn < turns; turn++) {
        const aofBefore = await stat("persistence", "aof_current_size");
        const inputBefore = await stat("stats", "total_net_input_bytes");
        await store.appendInbox(inbound({ platform: "telegram", chatId: sessionKey.slice(3), sessionKey, messageId: String(turn), text: words(turn, 160) }), Date.now());
        const begun = claimed(await store.beginTurn(sessionKey, `t-${turn}`, { leaseMs: 60_000, mode: "all" }));
        const state = begun.state;
        const added: ChatMessage[] = [
          { id: `m${state.nextSeq++}`, at: 0, role: "user", content: begun.batch.map((entry) => entry.text).join("\n") },
          { id: `m${state.nextSeq++}`, at: 0, role: "assistant", content: words(turn * 5, 600) },
        ];
        state.live.push(...added);
        const ended = await store.endTurn(sessionKey, begun.claim, { state, transcript: added, outbox: [] });
        if (ended.status !== "committed") throw new Error(`turn ${turn}: ${ended.status}`);
        aof.push((await stat("persistence", "aof_current_size")) - aofBefore);
        input.push((await stat("stats", "total_net_input_bytes")) - inputBefore);
      }
      rows.push([label, live.length, median(aof), median(input)]);
    }
    const output = `Bytes per turn (median of ${turns} turns; each adds a ~160-character message and a 600-character answer)\n\n` +
      table(["session", "live messages", "AOF bytes written / turn", "bytes sent to Redis / turn"], rows);
    console.log(output);
    return output;
  });
}

if (isMain(import.meta.url)) await main();
