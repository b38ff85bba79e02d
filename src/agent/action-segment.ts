/**
 * A button-press segment: the press answers the pending approval it names (approve or deny),
 * if the presser may answer it; a stale press only takes the buttons away.
 */
import type { InboxEntry } from "../session/store.js";
import { ALREADY_ANSWERED_TEXT, mayAnswer, notYoursText, parseApprovalAction } from "../tools/index.js";
import { resolveApproval } from "./approvals.js";
import type { ChatPorts } from "./ports.js";
import { addReply, answering } from "./replies.js";
import type { TurnRun } from "./turn-types.js";

/** A button press: resolves the pending approval it names, if the presser may answer it. */
export async function runActionSegment(run: TurnRun<ChatPorts>, entry: InboxEntry): Promise<void> {
  const pressed = entry.action ? parseApprovalAction(entry.action.id) : undefined;
  const pending = run.state.pendingApproval;
  const sourceMessageId = entry.action?.sourceMessageId;
  if (pressed && pending?.id !== pressed.approvalId && run.state.answeredApprovals?.includes(pressed.approvalId)) {
    // Answered by a press already, its message replaced by the outcome: that stays; only the presser hears.
    addReply(run, ALREADY_ANSWERED_TEXT, "notice", answering(run, [entry]), { private: true });
    return;
  }
  if (!pressed || !pending || pending.id !== pressed.approvalId) {
    // Answered already, expired, or superseded: the buttons go, nothing runs.
    addReply(run, "This request is no longer waiting for an answer.", "notice", answering(run, [entry]), sourceMessageId ? { replaces: sourceMessageId } : {});
    return;
  }
  if (!mayAnswer(pending, entry, run.engine.approval.admins)) {
    run.input.log.info({ approvalId: pending.id, userId: entry.userId }, "tool-approval-refused-not-the-requester");
    // Usually refused by the gateway at the press already (ingress.ts); when it could not tell,
    // to the presser alone where the platform can still (a Telegram alert, a Discord ephemeral message).
    addReply(run, notYoursText(pending), "notice", answering(run, [entry]), { private: true });
    return;
  }
  await resolveApproval(run, pressed.approve ? "approved" : "denied", {
    by: entry.userName,
    pressId: entry.messageId,
    continueLoop: true,
    ...(sourceMessageId ? { sourceMessageId } : {}),
  });
}
