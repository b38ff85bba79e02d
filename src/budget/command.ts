/**
 * `/budget <chat> …` (admins only): shows an account's budget, or sets one limit of it. Limits set
 * here are kept in Redis and win over the config file until set back to `default`.
 *
 *   /budget here                       this chat's budget (and the asker's)
 *   /budget tg:-1001234 daily $5       a chat's daily money limit
 *   /budget here monthly 2000000 tokens
 *   /budget user:tg:42 daily off       no daily limit for this user, whatever the config says
 *   /budget here daily default         back to the config's limit
 */
import type { BudgetMeter, Period } from "./meter.js";
import { budgetLines } from "./usage.js";

export const BUDGET_USAGE = [
  "Usage: /budget <chat> [daily|monthly <amount>]",
  "<chat>: here, a chat key (tg:-100123, dc:456) or user:<key> (user:tg:42)",
  "<amount>: $5 (money), 200000 tokens, off (no limit), default (the config's)",
].join("\n");

export interface BudgetCommandInput {
  meter: BudgetMeter;
  args: string;
  /** The session key of the chat the command was sent in (`here`). */
  here: string;
  now: number;
}

export async function budgetCommand({ meter, args, here, now }: BudgetCommandInput): Promise<string> {
  const words = args.trim().split(/\s+/).filter(Boolean);
  const target = words[0];
  if (target === undefined) return BUDGET_USAGE;
  const account = target === "here" ? { kind: "chat" as const, id: here }
    : target.startsWith("user:") ? { kind: "user" as const, id: target.slice("user:".length) }
    : { kind: "chat" as const, id: target };
  if (!/^(tg|dc|console):.+$/.test(account.id)) return BUDGET_USAGE;
  const label = `${account.kind} ${account.id}`;

  if (words.length === 1) {
    const status = (await meter.status(account.kind === "chat" ? { chat: account.id } : { chat: here, user: account.id }))
      .filter((slot) => slot.kind === account.kind);
    return [`Budget of ${label}:`, ...budgetLines(status, now, { names: "admin" })].join("\n");
  }

  const period = words[1];
  if (period !== "daily" && period !== "monthly") return BUDGET_USAGE;
  const amount = words.slice(2).join(" ").toLowerCase();
  const parsed = parseAmount(amount);
  if (!parsed) return BUDGET_USAGE;
  if (!("unit" in parsed)) {
    for (const unit of ["usd", "tokens"] as const) await meter.setLimit(account.kind, account.id, period as Period, unit, parsed.value);
    return parsed.value === "off" ? `No ${period} limit for ${label} now.` : `The ${period} limits of ${label} are the config's again.`;
  }
  await meter.setLimit(account.kind, account.id, period as Period, parsed.unit, parsed.value);
  const shown = parsed.unit === "usd" ? `$${parsed.value}` : `${parsed.value} tokens`;
  return `The ${period} budget of ${label} is now ${shown}.`;
}

type Amount = { unit: "usd" | "tokens"; value: number } | { value: "off" | "default" };

function parseAmount(text: string): Amount | undefined {
  if (text === "off" || text === "default") return { value: text };
  const money = /^\$\s*(\d+(?:\.\d+)?)$|^(\d+(?:\.\d+)?)\s*(?:usd|\$)$/.exec(text);
  if (money) {
    const value = Number(money[1] ?? money[2]);
    return value > 0 ? { unit: "usd", value } : undefined;
  }
  const tokens = /^(\d+)(k|m)?\s*tokens?$/.exec(text);
  if (tokens) {
    const value = Number(tokens[1]) * (tokens[2] === "k" ? 1_000 : tokens[2] === "m" ? 1_000_000 : 1);
    return value > 0 ? { unit: "tokens", value } : undefined;
  }
  return undefined;
}
