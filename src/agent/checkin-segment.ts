/**
 * A fired check-in (issue #35 item 3): one cheap model call that may decide to say nothing.
 * - **Only when the chat is idle**: a person wrote within `idleMs`, or writes in this very
 *   batch: the check-in is skipped without a model call (the next one looks again).
 * - **Cheap context**: the chat's system prompt (memory and pins ride on it as on every request),
 *   the summary, and the latest plain messages within `contextTokens` — never the whole history,
 *   no tool steps, no tools offered.
 * - **Silence**: an answer of `[nothing]` (or none) sends nothing and adds nothing to the
 *   conversation; after `maxQuietRuns` such runs in a row with nobody writing in between, the
 *   check-in pauses itself and says so once (a person's message starts the count again: a chat
 *   people still use keeps its check-ins). An answer worth sending is posted and kept as the assistant's own message.
 * - Paid by the turn's payer like any call (the firing already refused it when the budget is
 *   near its limit, src/schedule/fire.ts); its tokens count in the session's usage, but not as
 *   the live context's size (a check-in's prompt is not the conversation's).
 */
import type { ChatMessage } from "../core/messages.js";
import { wellFormed } from "../core/text.js";
import type { InboxEntry } from "../session/store.js";
import { CHECKIN_SILENT, requesterOf } from "../schedule/index.js";
import { chatTimeZone } from "./chat-time-zone.js";
import type { ChatPorts, CommandPorts } from "./ports.js";
import { addReply, answering } from "./replies.js";
import type { TurnRun } from "./turn-types.js";

/** The session's count of check-ins in a row that found nothing to say (state.engine). */
export const CHECKIN_QUIET_RUNS = "checkinQuietRuns";
/** The id of the latest person's message when that count was taken: a newer one resets it. */
const CHECKIN_QUIET_AFTER = "checkinQuietAfter";

/** CHECKIN_IDLE_MIN, CHECKIN_MAX_QUIET, CHECKIN_CONTEXT_TOKENS. */
export interface CheckinSettings {
  idleMs: number;
  maxQuietRuns: number;
  contextTokens: number;
}

export const DEFAULT_CHECKIN: CheckinSettings = { idleMs: 30 * 60_000, maxQuietRuns: 6, contextTokens: 2_000 };

/** Longest answer a check-in may write. */
const CHECKIN_MAX_TOKENS = 400;

export type CheckinOutcome = "skipped-busy" | "quiet" | "paused" | "posted";

export async function runCheckinSegment(run: TurnRun<ChatPorts & Pick<CommandPorts, "schedule">>, entry: InboxEntry, newId: () => string, othersInBatch: boolean): Promise<CheckinOutcome> {
  const { engine, input, state } = run;
  const settings = engine.checkin ?? DEFAULT_CHECKIN;
  const log = input.log.child({ itemId: entry.scheduled?.itemId });
  const now = engine.now();
  const lastPerson = state.live.findLast((message) => message.role === "user" && !isScheduled(message));
  if (othersInBatch || (lastPerson?.at !== undefined && now - lastPerson.at < settings.idleMs)) {
    log.info({ sessionKey: input.sessionKey }, "checkin-skipped-busy");
    return "skipped-busy";
  }

  const at = entry.sentAt;
  const request: ChatMessage[] = [...cheapContext(run, settings.contextTokens), { id: newId(), at, role: "user", content: entry.text }];
  const prepared = engine.context.prepareRequest(state, request);
  const result = await engine.llm.complete({
    ...prepared,
    maxTokens: Math.min(engine.maxOutputTokens, CHECKIN_MAX_TOKENS),
    signal: input.signal,
    ...(run.budget ? { budget: run.budget } : {}),
  });
  if (result.usage) {
    state.stats.promptTokens += result.usage.promptTokens;
    state.stats.completionTokens += result.usage.completionTokens;
    state.stats.cachedTokens += result.usage.cachedTokens;
  }
  const answer = wellFormed(result.content ?? "").trim();
  if (answer === "" || answer.replace(/[.\s]/g, "").toLowerCase() === CHECKIN_SILENT) {
    const sameQuiet = state.engine[CHECKIN_QUIET_AFTER] === (lastPerson?.id ?? null);
    const quiet = (sameQuiet ? Number(state.engine[CHECKIN_QUIET_RUNS] ?? 0) : 0) + 1;
    if (quiet < settings.maxQuietRuns || !engine.schedule || !entry.scheduled) {
      state.engine[CHECKIN_QUIET_RUNS] = quiet;
      state.engine[CHECKIN_QUIET_AFTER] = lastPerson?.id ?? null;
      log.info({ sessionKey: input.sessionKey, quiet }, "checkin-quiet");
      return "quiet";
    }
    delete state.engine[CHECKIN_QUIET_RUNS];
    await engine.schedule.pause(requesterOf(entry, chatTimeZone(state, engine.timeZone)), entry.scheduled.itemId);
    log.info({ sessionKey: input.sessionKey, quiet }, "checkin-paused-quiet");
    addReply(run, `⏸ I paused check-ins after ${quiet} in a row with nothing worth saying. /checkin on resumes them.`, "notice", answering(run, [entry]));
    return "paused";
  }
  delete state.engine[CHECKIN_QUIET_RUNS];
  const message: ChatMessage = { id: newId(), at, role: "assistant", content: answer };
  state.live.push(message);
  run.transcript.push(message);
  addReply(run, answer, "answer", answering(run, [entry]));
  return "posted";
}

const isScheduled = (message: ChatMessage) => message.role === "user" && /^\[(Scheduled task|Check-in) /.test(message.content);

/**
 * The system message(s), the summary, and the newest plain messages (user text, assistant text
 * without tool calls) that fit in `budget` tokens, oldest first.
 */
function cheapContext(run: TurnRun<ChatPorts>, budget: number): ChatMessage[] {
  const { state, engine } = run;
  const counter = engine.context.counter();
  const head = state.live.filter((message) => message.role === "system" || message.kind === "summary");
  const tail: ChatMessage[] = [];
  let used = 0;
  for (let index = state.live.length - 1; index >= 0; index--) {
    const message = state.live[index]!;
    if (message.role === "system" || message.kind === "summary" || message.role === "tool") continue;
    if (message.role === "assistant" && (message.tool_calls?.length || !message.content)) continue;
    const tokens = counter.countMessage(message);
    if (used + tokens > budget) break;
    used += tokens;
    tail.unshift(message);
  }
  return [...head, ...tail];
}
