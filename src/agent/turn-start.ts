/**
 * What a batch does before its first segment: an idle session is archived (IDLE_RESET_HOURS),
 * the system prompt heads the context, an approval whose time is up is denied, and attachments
 * are resolved (voice notes become text, so a spoken command is a command).
 */
import { freshSessionAfter, messageIdAllocator } from "../session/state.js";
import type { InboxEntry } from "../session/store.js";
import { expireApproval } from "./approvals.js";
import type { ChatPorts, StartPorts } from "./ports.js";
import { addReply, answering } from "./replies.js";
import { ensureSystemPrompt } from "./system-prompt.js";
import type { TurnRun } from "./turn-types.js";

export interface TurnStart {
  /** The batch with its attachments resolved. */
  batch: readonly InboxEntry[];
  /** The session archived for being idle. */
  archivedSessionId?: string;
}

export async function startTurn(run: TurnRun<StartPorts & ChatPorts>): Promise<TurnStart> {
  const { engine, input } = run;
  let archivedSessionId: string | undefined;
  // Optional idle reset (off by default: users of long-running chats hated nightly wipes).
  if (engine.idleResetMs > 0 && run.state.live.length > 0 && engine.now() - run.state.updatedAt >= engine.idleResetMs) {
    archivedSessionId = run.state.sessionId;
    run.state = freshSessionAfter(run.state, engine.now());
    input.log.info({ archivedSessionId }, "session-idle-reset");
  }
  ensureSystemPrompt(run.state, engine.systemPrompt, messageIdAllocator(run.state), engine.now());
  // An approval nobody answered in time is denied before anything else (its timeout job, or
  // any later turn if that job was lost).
  await expireApproval(run);
  const batch = await resolveMedia(run);
  return { batch, ...(archivedSessionId === undefined ? {} : { archivedSessionId }) };
}

/** Voice notes become text, files text, pictures references; what failed is told as a notice. */
async function resolveMedia(run: TurnRun<StartPorts>): Promise<readonly InboxEntry[]> {
  const { engine, input } = run;
  if (!engine.media) return input.batch;
  const sessionId = run.state.sessionId;
  const resolved = await engine.media.resolve(input.batch, {
    signal: input.signal,
    budget: run.budget,
    log: input.log,
    saveText: (id, text) => engine.toolOutputs.save(input.sessionKey, sessionId, id, text),
  });
  for (const notice of resolved.notices) addReply(run, notice.text, "notice", answering(run, [notice.entry]));
  return resolved.entries;
}
