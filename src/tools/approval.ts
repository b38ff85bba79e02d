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

/** Longest argument value shown in a request; the rest is elided with its length. */
const VALUE_MAX = 120;
const ARGUMENTS_MAX = 700;

/** One call as a person reads it: where it runs, what it is, its arguments in short. */
export function describeCall(call: WaitingCall): string {
  const where = call.server && call.tool ? `**${call.tool}** on server **${call.server}**` : `**${call.name}**`;
  return `${where}\n${summariseArguments(call.arguments)}`;
}

export function summariseArguments(raw: string): string {
  let parsed: unknown;
  try {
    parsed = raw.trim() === "" ? {} : JSON.parse(raw);
  } catch {
    return `arguments (not JSON): ${shorten(raw)}`;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return `arguments: ${shorten(JSON.stringify(parsed))}`;
  const entries = Object.entries(parsed);
  if (entries.length === 0) return "no arguments";
  const lines = entries.map(([key, value]) => `• ${key}: ${shorten(typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value) ?? "null")}`);
  const joined = lines.join("\n");
  return joined.length <= ARGUMENTS_MAX ? joined : `${joined.slice(0, ARGUMENTS_MAX)}… (${entries.length} arguments)`;
}

function shorten(text: string): string {
  return text.length <= VALUE_MAX ? text : `${text.slice(0, VALUE_MAX)}… (${text.length} characters)`;
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
