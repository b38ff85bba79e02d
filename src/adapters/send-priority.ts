/**
 * The priority a platform call carries to the send budget (src/core/send-budget.ts), set by the
 * code that knows what it sends (a notice, a preview) around the calls it makes; the adapters'
 * budget hooks (a grammY transformer, discord.js's request hook) read it. Unset: the hook's own
 * default for the client (final for replies).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { SendPriority } from "../core/send-budget.js";

const current = new AsyncLocalStorage<SendPriority>();

export function withSendPriority<T>(priority: SendPriority, call: () => T): T {
  return current.run(priority, call);
}

export function currentSendPriority(): SendPriority | undefined {
  return current.getStore();
}
