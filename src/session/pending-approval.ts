/**
 * The approval a session is waiting for, read alone (the state JSON, without the live context):
 * the gateway checks a button press against it before storing the press (gateway/ingress.ts).
 */
import type { Redis } from "ioredis";
import type { PendingApproval } from "../core/tools.js";
import { sessionKeys } from "./keys.js";

/** → the session's pending approval, if it has one. */
export async function readPendingApproval(redis: Redis, prefix: string, sessionKey: string): Promise<PendingApproval | undefined> {
  const raw = await redis.get(sessionKeys(prefix, sessionKey).state);
  if (raw === null || raw === "") return undefined;
  return (JSON.parse(raw) as { pendingApproval?: PendingApproval }).pendingApproval;
}
