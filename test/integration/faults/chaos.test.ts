/**
 * One short seed of the chaos run (test/helpers/chaos.ts; the long runs are `npm run chaos`):
 * gateway + 2 worker processes under SIGKILL, SIGSTOP past the lock (workers, Redis and the
 * gateway) and gateway restarts, while eight users chat over a webhook, with streamed answers
 * and reminders asked of the schedule tool.
 */
import { describe, expect, it } from "vitest";
import { runChaos } from "../../helpers/chaos.js";

describe("seeded chaos (short)", () => {
  it("loses nothing, doubles nothing and answers nothing twice", async () => {
    const report = await runChaos({ seed: 101, durationMs: 40_000, minFaults: 8 });
    expect(report.messages).toBeGreaterThan(50);
    expect(Object.values(report.faults).reduce((sum, count) => sum + count, 0)).toBeGreaterThanOrEqual(8);
    // duplicatePartsAtGatewayKill and unansweredAtUnconfirmedPart may be non-empty: the
    // documented floors (a part re-sent after a gateway SIGKILL; a part whose answer was lost
    // counted as sent and missing when Telegram had not acted).
    expect({ ...report.details, duplicatePartsAtGatewayKill: [], unansweredAtUnconfirmedPart: [], leftoverStatuses: [] }).toEqual({
      lost: [], doubled: [], unanswered: [], answeredTwice: [], duplicateParts: [], duplicatePartsAtGatewayKill: [],
      unansweredAtUnconfirmedPart: [], unreceived: [], duplicateReminders: [], missingReminders: [], approvalsUnanswered: [], leftoverStatuses: [],
    });
    expect(report.stuckChats).toBe(0);
    expect(report.remindersAsked).toBeGreaterThan(0);
  }, 400_000);
});
