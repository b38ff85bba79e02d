/**
 * The approval a session is waiting for, and the approvals a press answered, read alone (the
 * state JSON, without the live context): the gateway checks a button press against them before
 * storing the press (gateway/ingress.ts).
 */
import type { Redis } from "ioredis";
import type { PendingApproval } from "../core/tools.js";
import { sessionKeys } from "./keys.js";

export interface ApprovalsOfSession {
  pending?: PendingApproval;
  /** SessionState.answeredApprovals: kept across /new, whose request messages still show their outcome. */
  answered: readonly string[];
}

/** → the session's pending approval, if it has one, and the ids of the approvals a press answered. */
export async function readApprovals(redis: Redis, prefix: string, sessionKey: string): Promise<ApprovalsOfSession> {
  const raw = await redis.get(sessionKeys(prefix, sessionKey).state);
  if (raw === null || raw === "") return { answered: [] };
  const state = JSON.parse(raw) as { pendingApproval?: PendingApproval; answeredApprovals?: string[] };
  return { ...(state.pendingApproval ? { pending: state.pendingApproval } : {}), answered: state.answeredApprovals ?? [] };
}
