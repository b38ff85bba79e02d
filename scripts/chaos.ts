/**
 * npm run chaos -- --seed N --minutes M [--seeds K] [--users U] [--faults gateway-kill,redis-pause] [--topology single|sentinel|cluster]
 * Runs the seeded chaos (test/helpers/chaos.ts) for each seed N, N+1, … N+K−1 and prints one
 * row per seed: lost / doubled / answered twice / duplicate parts, and how many of those the
 * at-least-once floor explains (the part was in flight when its gateway was SIGKILLed); updates
 * never stored; reminders asked, delivered, doubled and missing; approvals asked, shown, pressed,
 * and any never shown, shown too late to press, requested twice or left waiting; stuck chats;
 * status messages left in a chat. Exits 1 if any seed is not clean (anything else than the
 * floors' parts and requests, and leftover statuses, which Telegram's lost create answers can
 * leave: docs/streaming.md).
 */
import { parseArgs } from "node:util";
import { CHAOS_TOPOLOGIES, FAULT_KINDS, faultsFor, runChaos, type ChaosReport, type FaultKind } from "../test/helpers/chaos.js";
import { buildForChildProcesses } from "../test/helpers/test-build.js";

const { values } = parseArgs({
  options: {
    seed: { type: "string", default: "1" },
    minutes: { type: "string", default: "2" },
    seeds: { type: "string", default: "1" },
    users: { type: "string", default: "8" },
    faults: { type: "string" },
    // sentinel: a master, two replicas, three sentinels; cluster: three masters, a replica each.
    // With either, the Redis faults are failovers (a master frozen past it, or killed).
    topology: { type: "string", default: "single" },
  },
});
const topology = CHAOS_TOPOLOGIES.find((known) => known === values.topology);
if (!topology) throw new Error(`unknown topology ${values.topology}; known: ${CHAOS_TOPOLOGIES.join(", ")}`);
const faults = (values.faults?.split(",").map((kind) => kind.trim()) ?? faultsFor(topology)) as FaultKind[];
for (const kind of faults) if (!FAULT_KINDS.includes(kind)) throw new Error(`unknown fault ${kind}; known: ${FAULT_KINDS.join(", ")}`);
const first = Number(values.seed);
const count = Number(values.seeds);
const durationMs = Math.round(Number(values.minutes) * 60_000);

// One build of the app for every seed's processes.
const build = buildForChildProcesses();
const reports: ChaosReport[] = [];
try {
  for (let seed = first; seed < first + count; seed++) {
    const report = await runChaos({ seed, durationMs, users: Number(values.users), faults, topology, log: (line) => process.stderr.write(`${line}\n`) });
    reports.push(report);
    process.stderr.write(`${JSON.stringify(report)}\n`);
  }
} finally {
  build.remove();
}

const faultsOf = (report: ChaosReport) => Object.entries(report.faults).sort().map(([kind, n]) => `${kind} ${n}`).join(", ");
process.stdout.write("| seed | minutes | messages | parts sent | lost | doubled | unanswered (at an unconfirmed part) | answered twice | duplicate parts (at a gateway death; of which at a shutdown timeout) | never stored | reminders asked / delivered | approvals asked / shown / pressed | approvals unshown (at an unconfirmed part) / late / asked twice / pending | duplicate reminders (a post repeated at a gateway death) | missing reminders | stuck chats | leftover statuses | faults |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
for (const report of reports) {
  process.stdout.write(`| ${report.seed} | ${report.durationMs / 60_000} | ${report.messages} | ${report.parts} | ${report.lost} | ${report.doubled} | ${report.unanswered} (${report.unansweredAtUnconfirmedPart}) | ${report.answeredTwice} | ${report.duplicateParts} (${report.duplicatePartsAtGatewayKill}; ${report.duplicatePartsAtShutdownTimeout} of ${report.shutdownTimeouts}) | ${report.unreceived} | ${report.remindersAsked} / ${report.remindersDelivered} | ${report.approvalsAsked} / ${report.approvalsShown} / ${report.approvalsPressed} | ${report.approvalsUnshown} (${report.approvalsUnshownAtUnconfirmedPart}) / ${report.approvalsLate} / ${report.approvalsAskedTwice} / ${report.approvalsPending} | ${report.duplicateReminders} (${report.duplicateRemindersAtGatewayKill}) | ${report.missingReminders} | ${report.stuckChats} | ${report.leftoverStatuses} | ${faultsOf(report)} |\n`);
}
process.exit(reports.every((report) => report.clean) ? 0 : 1);
