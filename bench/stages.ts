/**
 * `bench/pipeline.ts --stages`: where a turn's time goes. Every process of the pipeline marks
 * the points a message passes (src/core/stages.ts, a diagnostics channel); the workers write
 * theirs to a file through a preloaded probe, the gateway (this process) keeps its own. After
 * the run, the marks of each message are put in order and the time between consecutive points
 * is reported per offered rate: p50 / p90 (or the percentiles asked for) / mean in ms.
 */
import { appendFileSync, readFileSync, rmSync } from "node:fs";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StageMark, TurnStage } from "../src/core/stages.js";
import { percentile, table } from "./stats.js";

const CHANNEL = "longhaul:turn-stage";

/** The path of one message, in the order a turn passes it (what `sending` waits on). */
const PATH: readonly BenchStage[] = [
  "ingress", "enqueued", "picked", "begun", "loop", "reserved", "answered", "settled", "loop-done", "commit", "delivery-picked", "delivery-begun", "sending", "visible",
];

/** The app's points, and `visible`: the platform fake accepted the answer (marked by bench/load.ts, not the app). */
export type BenchStage = TurnStage | "visible";
export type BenchMark = Omit<StageMark, "stage"> & { stage: BenchStage };

/**
 * A worker's probe, given as a preloaded module: it keeps the marks in memory and appends them to
 * `file` twice a second and when the process exits (SIGTERM ends a worker through exit).
 */
export function stageProbe(file: string): string {
  return `data:text/javascript,${encodeURIComponent(`
import { subscribe } from "node:diagnostics_channel";
import { appendFileSync } from "node:fs";
const lines = [];
subscribe(${JSON.stringify(CHANNEL)}, (mark) => { lines.push(mark.stage + " " + mark.sessionKey + " " + mark.at.toFixed(3)); });
const flush = () => { if (lines.length > 0) appendFileSync(${JSON.stringify(file)}, lines.splice(0).join("\\n") + "\\n"); };
setInterval(flush, 500).unref();
process.on("exit", flush);`)}`;
}

export interface StageRecorder {
  /** Where the workers' probes write. */
  file: string;
  /** Stops recording; → every mark of every process. */
  stop(): StageMark[];
}

/** Records this process's marks and gives the workers' probe file. */
export function recordStages(): StageRecorder {
  const file = join(tmpdir(), `longhaul-stages-${process.pid}-${Date.now()}.txt`);
  appendFileSync(file, "");
  const own: StageMark[] = [];
  const onMark = (mark: unknown) => own.push(mark as StageMark);
  subscribe(CHANNEL, onMark);
  return {
    file,
    stop() {
      unsubscribe(CHANNEL, onMark);
      const theirs = readFileSync(file, "utf8").split("\n").filter((line) => line !== "").map((line): StageMark => {
        const [stage, sessionKey, at] = line.split(" ");
        return { stage: stage as TurnStage, sessionKey: sessionKey!, at: Number(at) };
      });
      rmSync(file, { force: true });
      return [...own, ...theirs];
    },
  };
}

/** One message's way: when it first passed each point. */
export interface TurnMarks {
  sessionKey: string;
  at: Map<BenchStage, number>;
}

/**
 * Each message's first mark of each point, from its `ingress` on (a session answers one message
 * at a time in the bench: its marks until the next `ingress` are that message's); only messages
 * that reached `sending` unless `answeredOnly` is false.
 */
export function turnsOf(marks: readonly BenchMark[], answeredOnly = true): TurnMarks[] {
  const turns: TurnMarks[] = [];
  const open = new Map<string, TurnMarks>();
  for (const mark of [...marks].sort((a, b) => a.at - b.at)) {
    if (mark.stage === "ingress") {
      const turn: TurnMarks = { sessionKey: mark.sessionKey, at: new Map() };
      open.set(mark.sessionKey, turn);
      turns.push(turn);
    }
    const turn = open.get(mark.sessionKey);
    if (turn && !turn.at.has(mark.stage)) turn.at.set(mark.stage, mark.at);
  }
  return answeredOnly ? turns.filter((turn) => turn.at.has("sending")) : turns;
}

/** How many messages stopped at each point: the last point of PATH each reached (`sending`: all the way). */
export function furthestPoints(turns: readonly TurnMarks[]): Partial<Record<BenchStage, number>> {
  const counts: Partial<Record<BenchStage, number>> = {};
  for (const turn of turns) {
    const last = [...PATH].reverse().find((stage) => turn.at.has(stage));
    if (last) counts[last] = (counts[last] ?? 0) + 1;
  }
  return counts;
}

/**
 * Time between consecutive points of PATH, and over the whole path: the points at least 90% of
 * the messages passed (a point a turn can skip, like the budget's when no budget is kept, drops
 * out), over the messages that passed all of them (under overload a session's next message can
 * arrive before its last was answered, and their marks mix).
 */
export function stageTable(title: string, all: readonly TurnMarks[], percentiles: readonly number[] = [50, 90]): string {
  const path = PATH.filter((stage) => all.filter((turn) => turn.at.has(stage)).length >= 0.9 * all.length);
  const turns = all.filter((turn) => path.every((stage) => turn.at.has(stage)));
  const rows: Array<Array<string | number>> = [];
  const row = (label: string, from: BenchStage, to: BenchStage) => {
    const spans = turns.map((turn) => turn.at.get(to)! - turn.at.get(from)!).sort((a, b) => a - b);
    rows.push([label, ...percentiles.map((p) => percentile(spans, p)), spans.reduce((sum, span) => sum + span, 0) / spans.length, spans.at(-1) ?? 0, spans.filter((span) => span >= 1_000).length]);
  };
  for (let index = 1; index < path.length; index++) row(`${path[index - 1]} → ${path[index]}`, path[index - 1]!, path[index]!);
  if (path.length > 1) row(`whole path: ${path[0]} → ${path[path.length - 1]}`, path[0]!, path[path.length - 1]!);
  return `${title} (${turns.length} of ${all.length} messages answered)\n\n${table(["stage", ...percentiles.map((p) => `p${p} ms`), "mean ms", "max ms", "n ≥ 1 s"], rows)}`;
}

/**
 * Where the slowest messages' time went: the `share` of the turns that passed every point with
 * the longest whole path, and the mean time of each step over them (the percentiles of
 * stageTable are taken step by step, so they cannot say which step the slow messages lost
 * their time in).
 */
export function tailTable(title: string, all: readonly TurnMarks[], share = 0.02): string {
  const path = PATH.filter((stage) => all.filter((turn) => turn.at.has(stage)).length >= 0.9 * all.length);
  const first = path[0]!;
  const last = path[path.length - 1]!;
  const turns = all.filter((turn) => path.every((stage) => turn.at.has(stage)))
    .sort((a, b) => (b.at.get(last)! - b.at.get(first)!) - (a.at.get(last)! - a.at.get(first)!));
  const tail = turns.slice(0, Math.max(1, Math.ceil(share * turns.length)));
  const mean = (from: BenchStage, to: BenchStage) => tail.reduce((sum, turn) => sum + turn.at.get(to)! - turn.at.get(from)!, 0) / tail.length;
  const rows: Array<Array<string | number>> = [];
  for (let index = 1; index < path.length; index++) rows.push([`${path[index - 1]} → ${path[index]}`, mean(path[index - 1]!, path[index]!)]);
  if (path.length > 1) rows.push([`whole path: ${first} → ${last}`, mean(first, last)]);
  return `${title} (the slowest ${tail.length} of ${turns.length})\n\n${table(["stage", "mean ms"], rows)}`;
}
