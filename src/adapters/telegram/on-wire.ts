/**
 * Which reply part a Bot API request carries, so that the delivery knows when a part is on the
 * wire: sent to Telegram and not answered yet. A part in that state when the process must exit
 * (its shutdown time ran out) has an unknown outcome, and a Telegram part whose outcome is
 * unknown is never sent again (docs/architecture.md, "Shutdown"). Only the innermost
 * transformer (bot.ts) can tell: auto-retry's waits after a 429 and the send budget's waits sit
 * outside it, and a part waiting there was not sent.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Transformer } from "grammy";

/**
 * Hears `true` when a request carrying the part goes out, `false` when it is answered or fails —
 * then `answered`: Telegram answered it with success (the part is in the chat).
 */
export type WireListener = (onWire: boolean, answered?: boolean) => void;

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
  let answered = false;
  try {
    const response = await previous(method, payload, signal);
    answered = response.ok;
    return response;
  } finally {
    listener(false, answered);
  }
};
