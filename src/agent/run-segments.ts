/**
 * The orchestrator of a batch's turn: start (idle reset, system prompt, expired approval,
 * media), then each segment in order on one working copy of the state — a button press, a fired
 * reminder, a command, or an agent turn over chat messages — each handled by its own module with
 * its own model and payer. It only sequences them; no handler imports it.
 */
import type { InboxEntry } from "../session/store.js";
import { runActionSegment } from "./action-segment.js";
import { activeEngine } from "./active-model.js";
import { runCheckinSegment } from "./checkin-segment.js";
import { runChatSegment } from "./chat-segment.js";
import { runCommandSegment } from "./command-segment.js";
import type { TurnEngine } from "./ports.js";
import { runReminderSegment } from "./reminder-segment.js";
import { batchBudget, enterSegment } from "./segment-switch.js";
import { entriesOf, segmentBatch } from "./segments.js";
import { BatchFailedError, FailedAfterCompaction } from "./turn-failure.js";
import { startTurn } from "./turn-start.js";
import type { SegmentsInput, SegmentsResult, TurnRun } from "./turn-types.js";
import { copyPlain, workingCopy } from "./working-copy.js";

/**
 * Runs a batch: each segment in order, all on one working copy of the state. A failing segment
 * throws BatchFailedError, which carries what the segments before it did.
 */
export async function runTurnSegments(engine: TurnEngine, input: SegmentsInput): Promise<SegmentsResult> {
  const progress: SegmentProgress = {};
  try {
    return await runSegments(engine, input, progress);
  } catch (error) {
    throw new BatchFailedError(progress.done ?? { state: input.state, transcript: [], replies: [] }, progress.rest ?? input.batch, error);
  }
}

interface SegmentProgress {
  done?: SegmentsResult;
  rest?: InboxEntry[];
}

async function runSegments(base: TurnEngine, input: SegmentsInput, progress: SegmentProgress): Promise<SegmentsResult> {
  const state = workingCopy(input.state);
  const run: TurnRun = { engine: activeEngine(base, state), input, state, transcript: [], replies: [], approvalTimeouts: [], budget: batchBudget(base, input) };
  const start = await startTurn(run);
  let archivedSessionId = start.archivedSessionId;
  const segments = segmentBatch(start.batch);
  for (const [index, segment] of segments.entries()) {
    if (index > 0) {
      // What the batch did so far stays done if this segment fails (a /new before a failed chat).
      progress.done = resultOf(run, archivedSessionId, true);
      progress.rest = entriesOf(segments.slice(index));
    }
    const { newId, scope } = enterSegment(base, run, segment);
    switch (segment.kind) {
      case "action":
        await runActionSegment(run, segment.entry);
        break;
      case "reminder":
        runReminderSegment(run, segment.entry, newId);
        break;
      case "checkin":
        await runCheckinSegment(run, segment.entry, newId, segments.some((other) => other.kind === "chat" || other.kind === "command"));
        break;
      case "command":
        archivedSessionId = (await runCommandSegment(run, segment.command, segment.entry, scope)) ?? archivedSessionId;
        break;
      case "chat":
        try {
          await runChatSegment(run, segment.entries, newId, scope);
        } catch (error) {
          if (!(error instanceof FailedAfterCompaction)) throw error;
          // The compaction stays (its summary is in the transcript with the user messages):
          // the batch fails from the next segment on, this one's messages already in the context.
          run.state.live = [...error.context];
          progress.done = resultOf(run, archivedSessionId, true);
          progress.rest = entriesOf(segments.slice(index + 1));
          throw error.cause;
        }
        break;
    }
  }
  run.state.updatedAt = run.engine.now();
  return resultOf(run, archivedSessionId, false);
}

/**
 * What a run has produced; `snapshot` copies it, so the run can go on without changing it (the
 * live messages are shared, as in `workingCopy`: they are only ever replaced).
 */
function resultOf(run: TurnRun, archivedSessionId: string | undefined, snapshot: boolean): SegmentsResult {
  const copy = <T>(value: T): T => (snapshot ? copyPlain(value) : value);
  return {
    state: snapshot ? workingCopy(run.state) : run.state,
    transcript: copy(run.transcript),
    replies: copy(run.replies),
    ...(archivedSessionId === undefined ? {} : { archivedSessionId }),
    ...(run.approvalTimeouts.length > 0 ? { approvalTimeouts: copy(run.approvalTimeouts) } : {}),
  };
}
