/**
 * What the load bench's user draws alone cost (issue 32; docs/decisions.md, "Load bench: a
 * chat's own wait apart"): `npx tsx bench/load-followups.ts [--rates=25] [--seconds=60]
 * [--overhead-ms=140]`. Replays bench/load.ts's messages (the same users, tool steps and model
 * times) through nothing but each session's order — a message that arrives during its chat's
 * turn is answered by the next turn (BUSY_MODE=collect), every turn answered `--overhead-ms`
 * after its model finished — and prints the wait above the model the bench would report, split
 * as it splits it (splitWaits), for random and for `--patient` users. No longhaul runs: whatever
 * p99 this gives is the workload's, not longhaul's.
 */
import { messageOf, modelTimeMs, parsePlan, random, splitWaits } from "./load.js";
import { isMain, percentile, table } from "./stats.js";

export function simulate(args: readonly string[], overheadMs: number): ReturnType<typeof splitWaits> {
  const plan = parsePlan(args);
  const rate = plan.rates[0]!;
  const draw = random(20261206 + rate);
  const sent = new Map<number, { at: number; modelMs: number; user: number }>();
  const answered = new Map<number, number>();
  const sessions = new Map<number, { busyUntil: number; pending: number[] }>();
  const lastOf = new Map<number, number>();
  /** Runs `user`'s turns that start by `now`: each answers every message pending at its start. */
  const advance = (user: number, now: number) => {
    const session = sessions.get(user)!;
    while (session.pending.length > 0 && session.busyUntil <= now) {
      const batch = session.pending.splice(0);
      const start = Math.max(session.busyUntil, sent.get(batch[0]!)!.at);
      // The model answers a batch as its last message asks (bench/paced-llm.ts).
      const end = start + sent.get(batch.at(-1)!)!.modelMs + overheadMs;
      for (const id of batch) answered.set(id, end);
      session.busyUntil = end;
    }
  };
  for (let index = 0; index < Math.round(rate * plan.seconds); index++) {
    const at = (index * 1_000) / rate;
    for (const user of sessions.keys()) advance(user, at);
    const busy = (user: number) => {
      const last = lastOf.get(user);
      return last !== undefined && !((answered.get(last) ?? Number.POSITIVE_INFINITY) <= at);
    };
    const message = plan.patient ? messageOf(index, plan, draw, busy) : messageOf(index, plan, draw);
    lastOf.set(message.user, index);
    sent.set(index, { at, modelMs: modelTimeMs(plan, message.tools), user: message.user });
    const session = sessions.get(message.user) ?? { busyUntil: 0, pending: [] };
    sessions.set(message.user, session);
    session.pending.push(index);
    advance(message.user, at);
  }
  for (const user of sessions.keys()) advance(user, Number.POSITIVE_INFINITY);
  return splitWaits(sent, answered);
}

export function main(args: string[] = process.argv.slice(2)): string {
  const overheadMs = Number(args.find((arg) => arg.startsWith("--overhead-ms="))?.split("=")[1] ?? 140);
  const rest = args.filter((arg) => !arg.startsWith("--overhead-ms="));
  const seconds = (values: readonly number[], p: number) => (values.length === 0 ? "–" : (percentile([...values].sort((a, b) => a - b), p) / 1_000).toFixed(2));
  const rows = [false, true].map((patient) => {
    const split = simulate(patient ? [...rest, "--patient"] : rest, overheadMs);
    return [patient ? "patient" : "random (the bench's default)", `${seconds(split.all, 50)} / ${seconds(split.all, 99)}`, `${seconds(split.own, 50)} / ${seconds(split.own, 99)}`, `${split.behindChat.length}: ${seconds(split.behindChat, 50)} / ${seconds(split.behindChat, 99)}, ${split.batched} batched`];
  });
  const output = table(["users", "wait above model p50 / p99 s", "own wait p50 / p99 s", "follow-ups: n, behind their chat p50 / p99 s"], rows);
  console.log(output);
  return output;
}

if (isMain(import.meta.url)) main();
