/** The budget lines of /usage and `/budget <chat>`: what is used and left of each limit, and when it resets. */
import type { SlotStatus } from "./meter.js";
import { resetText } from "./meter.js";

const money = (usd: number) => (usd < 1 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`);
const tokens = (count: number) => (count >= 1_000_000 ? `${(count / 1_000_000).toFixed(1)}M` : count >= 1_000 ? `${Math.round(count / 1_000)}K` : String(count));

export function budgetLines(status: readonly SlotStatus[], now: number, options: { names?: "chat" | "admin" } = {}): string[] {
  const lines: string[] = [];
  for (const slot of status) {
    const who = options.names === "admin" ? `${slot.kind} ${slot.id}` : slot.kind === "chat" ? "this chat" : "you";
    const when = slot.period === "daily" ? "today" : "this month";
    const parts: string[] = [];
    if (slot.limit.usd !== undefined) {
      const left = Math.max(0, slot.limit.usd - slot.used.usd);
      parts.push(`${money(slot.used.usd)} of ${money(slot.limit.usd)} used, ${money(left)} left (${Math.floor((slot.used.usd / slot.limit.usd) * 100)}%)`);
    }
    if (slot.limit.tokens !== undefined) {
      const left = Math.max(0, slot.limit.tokens - slot.used.tokens);
      parts.push(`${tokens(slot.used.tokens)} of ${tokens(slot.limit.tokens)} tokens used, ${tokens(left)} left (${Math.floor((slot.used.tokens / slot.limit.tokens) * 100)}%)`);
    }
    if (parts.length === 0) continue;
    lines.push(`Budget ${when} for ${who}: ${parts.join("; ")}; ${resetText(slot.period, now)}`);
  }
  return lines.length > 0 ? lines : ["Budgets: no limits set"];
}
