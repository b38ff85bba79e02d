/**
 * The pairing invariant every request must hold (SPEC §3), for the context engine's property
 * tests: no tool result without its call, and each call with tool_calls followed directly by one
 * result per call. `expect` is called only on a breach: the property tests check every message
 * of thousands of contexts, and vitest's per-call bookkeeping was a quarter of their CPU time.
 */
import { expect } from "vitest";
import type { ChatMessage } from "../../src/core/messages.js";

export function expectToolPairs(messages: readonly ChatMessage[]): void {
  let index = 0;
  while (index < messages.length) {
    const message = messages[index]!;
    if (message.role === "tool") expect(message.role, `orphan tool result at ${index}`).not.toBe("tool");
    index += 1;
    if (message.role !== "assistant" || !message.tool_calls?.length) continue;
    const answered: string[] = [];
    while (messages[index]?.role === "tool") answered.push((messages[index] as Extract<ChatMessage, { role: "tool" }>).tool_call_id), (index += 1);
    const called = message.tool_calls.map((call) => call.id).sort();
    answered.sort();
    if (answered.length !== called.length || answered.some((id, at) => id !== called[at])) expect(answered).toEqual(called);
  }
}
