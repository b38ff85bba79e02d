/**
 * A fired-reminder segment: a fixed reminder needs no model — its text is the reply, and the
 * conversation keeps it as the assistant's own message, so the agent knows later that it
 * reminded the user. (A fired *task* is a chat segment of its own.)
 */
import type { InboxEntry } from "../session/store.js";
import { addReply, answering } from "./replies.js";
import type { TurnRun } from "./turn-types.js";
import { reminderMessage } from "./user-messages.js";

export function runReminderSegment(run: TurnRun<unknown>, entry: InboxEntry, newId: () => string): void {
  const message = reminderMessage(entry, newId());
  run.state.live.push(message);
  run.transcript.push(message);
  addReply(run, entry.text, "answer", answering(run, [entry]));
}
