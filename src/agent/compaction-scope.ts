/** What a compaction during a turn works with: the turn's signal, log, ids, transcript, preview, time zone and payer. */
import type { CompactionScope } from "../session-context/index.js";
import type { Clock } from "./ports.js";
import type { TurnRun } from "./turn-types.js";
import { chatTimeZone } from "./chat-time-zone.js";

export function compactionScope(run: TurnRun<Clock>, newId: () => string): CompactionScope {
  return {
    signal: run.input.signal, log: run.input.log, newId, addToTranscript: (messages) => run.transcript.push(...messages),
    onCompacting: () => run.input.preview?.compacting(),
    timeZone: chatTimeZone(run.state, run.engine.timeZone),
    budget: run.budget,
  };
}
