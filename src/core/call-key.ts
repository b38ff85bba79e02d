/**
 * The idempotency key of a tool call whose effect lands outside the turn's commit (a reminder
 * created, a memory fact written): the session, the version its turn commits, and the call's
 * arguments (keys sorted). A re-run of the turn (a retry after a later step failed, a worker that
 * died past its lease) asks the model again, which names its calls anew but asks for the same
 * effect with the same words, so the call id cannot be the key; the arguments are. An identical
 * second call in one turn is the same effect. No key outside a turn (no version).
 */
import { createHash } from "node:crypto";

export function toolCallKey(context: { sessionKey?: string; turnVersion?: number }, args: Record<string, unknown>): string | undefined {
  if (context.turnVersion === undefined || context.sessionKey === undefined) return undefined;
  const canonical = JSON.stringify(Object.keys(args).sort().map((key) => [key, args[key]]));
  return createHash("sha256").update(`${context.sessionKey}\n${context.turnVersion}\n${canonical}`).digest("base64url").slice(0, 32);
}
