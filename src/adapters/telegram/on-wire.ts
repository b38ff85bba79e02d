/**
 * Which reply part a Bot API request carries, so that the delivery knows when a part is on the
 * wire: sent to Telegram and not answered yet. A part in that state when the process must exit
 * (its shutdown time ran out) has an unknown outcome, and a Telegram part whose outcome is
 * unknown is never sent again (docs/architecture.md, "Shutdown"). Only the innermost
 * transformer (bot.ts) can tell: auto-retry's waits after a 429 and the send budget's waits sit
 * outside it, and a part waiting there was not sent.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { GrammyError, HttpError, type Transformer } from "grammy";
import type { RequestOutcome } from "../channel-adapter.js";

/**
 * Hears `true` when a request carrying the part goes out, `false` when it ended — with how:
 * answered with success (the part is in the chat), its outcome unknown, or failed before acting.
 */
export type WireListener = (onWire: boolean, outcome?: RequestOutcome) => void;

const carried = new AsyncLocalStorage<WireListener>();

/** Runs `call` (the Bot API requests of one part) with `listener` told of each request on the wire. */
export function carryingPart<T>(listener: WireListener | undefined, call: () => Promise<T>): Promise<T> {
  return listener ? carried.run(listener, call) : call();
}

/** Installed first (innermost: right around the HTTP request), after every wait. */
export const wireTransformer: Transformer = async (previous, method, payload, signal) => {
  const listener = carried.getStore();
  if (!listener) return previous(method, payload, signal);
  listener(true);
  let outcome: RequestOutcome = "unknown";
  try {
    const response = await previous(method, payload, signal);
    outcome = response.ok ? "answered" : response.error_code >= 500 ? "unknown" : "failed";
    return response;
  } catch (error) {
    outcome = outcomeUnknown(error) ? "unknown" : "failed";
    throw error;
  } finally {
    listener(false, outcome);
  }
};

/**
 * Errors that say the request never reached Telegram: nothing can have been sent, so sending
 * again is safe. Any other network failure (a reset or timeout while waiting for the answer)
 * may come after Telegram acted.
 */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH"]);

/**
 * A send whose outcome is unknown: Telegram may have acted and only its answer was lost (a
 * connection reset or timed out after the request went out, or a 5xx, which Telegram can
 * answer after sending). The Bot API has no idempotency key and no way for a bot to read the
 * chat back, so such a part is never sent again (docs/architecture.md, "Nothing answered
 * twice"). 429 and other 4xx answers mean Telegram did not act.
 */
export function outcomeUnknown(error: unknown): boolean {
  if (error instanceof GrammyError) return typeof error.error_code === "number" && error.error_code >= 500;
  if (!(error instanceof HttpError)) return false;
  const cause = error.error as { code?: unknown; errno?: unknown } | undefined;
  const code = typeof cause?.code === "string" ? cause.code : typeof cause?.errno === "string" ? cause.errno : undefined;
  return code === undefined || !NOT_SENT_CODES.has(code);
}
