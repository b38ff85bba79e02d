/**
 * The Usage page: cost and tokens per day (all chats, or one chat, user or model), the period's
 * chats, users and models by cost, as bar charts drawn on the server (SVG: no JavaScript); the
 * budgets and their use (the budget meter's counters); compaction savings. Figures are the turn
 * history's ledger (src/session/turn-history.ts), priced at commit with the catalogue's prices.
 */
import type { Redis } from "ioredis";
import type { Config } from "../../config/index.js";
import { BudgetMeter, type SlotStatus } from "../budget/index.js";
import { readUsageLedger } from "../session/turn-history.js";
import { formatTokens, formatUsd, html, Html } from "./html.js";

export const PERIODS_DAYS = [7, 14, 30] as const;
type Figures = { usd: number; tokens: number };

export interface UsageData {
  days: Array<{ day: string; all: Figures; owner?: Figures; compactions: number; saved: number }>;
  totals: Record<"chat" | "user" | "model", Array<{ owner: string } & Figures>>;
  budgets: Array<{ account: string; slots: SlotStatus[] }>;
}

export async function loadUsage(redis: Redis, config: Config, now: number, daysBack: number, owner?: { kind: string; id: string }): Promise<UsageData> {
  const days: UsageData["days"] = [];
  const totals = { chat: new Map<string, Figures>(), user: new Map<string, Figures>(), model: new Map<string, Figures>() };
  for (let back = daysBack - 1; back >= 0; back--) {
    const day = new Date(now - back * 86_400_000).toISOString().slice(0, 10);
    const ledger = await readUsageLedger(redis, config.REDIS_PREFIX, day);
    const all = { usd: 0, tokens: 0 };
    // Each turn is booked once under its model: the models' sum is the day's total.
    for (const figures of ledger.get("model")?.values() ?? []) {
      all.usd += figures.usd;
      all.tokens += figures.tokens;
    }
    for (const kind of ["chat", "user", "model"] as const) {
      for (const [name, figures] of ledger.get(kind) ?? []) {
        const total = totals[kind].get(name) ?? { usd: 0, tokens: 0 };
        total.usd += figures.usd;
        total.tokens += figures.tokens;
        totals[kind].set(name, total);
      }
    }
    const mine = owner ? ledger.get(owner.kind)?.get(owner.id) ?? { usd: 0, tokens: 0 } : undefined;
    days.push({
      day, all, ...(mine ? { owner: mine } : {}),
      compactions: ledger.get("compactions")?.get("all")?.tokens ?? 0,
      saved: ledger.get("saved")?.get("all")?.tokens ?? 0,
    });
  }
  const meter = new BudgetMeter(redis, config.REDIS_PREFIX, config.budgets, () => now);
  const budgets: UsageData["budgets"] = [];
  for (const account of (await meter.accounts()).slice(0, 200)) {
    const status = await meter.status(account.kind === "chat" ? { chat: account.id } : { chat: "-", user: account.id });
    budgets.push({ account: `${account.kind} ${account.id}`, slots: status.filter((slot) => slot.kind === account.kind) });
  }
  const sorted = (map: Map<string, Figures>) => [...map].map(([name, figures]) => ({ owner: name, ...figures })).sort((a, b) => b.usd - a.usd || b.tokens - a.tokens);
  return { days, totals: { chat: sorted(totals.chat), user: sorted(totals.user), model: sorted(totals.model) }, budgets };
}

const BAR_WIDTH = 420;

/** Horizontal bars, one per row: label, bar, figure. An SVG with a text alternative; the table beside it holds the same figures. */
function bars(title: string, rows: Array<{ label: string; value: number; text: string; href?: string }>): Html {
  const max = Math.max(0, ...rows.map((row) => row.value));
  const height = rows.length * 22 + 4;
  return html`<figure class="bars">
  <figcaption>${title}</figcaption>
  <svg width="${BAR_WIDTH + 260}" height="${height}" role="img" aria-label="${title}: ${rows.map((row) => `${row.label} ${row.text}`).join("; ")}">
    ${rows.map((row, index) => {
      const width = max > 0 ? Math.max(row.value > 0 ? 1 : 0, Math.round((row.value / max) * BAR_WIDTH)) : 0;
      const y = index * 22 + 2;
      return html`<text x="0" y="${y + 14}" class="bar-label">${row.label.length > 24 ? `${row.label.slice(0, 23)}…` : row.label}</text><rect x="170" y="${y}" width="${width}" height="18" class="bar"></rect><text x="${176 + width}" y="${y + 14}" class="bar-value">${row.text}</text>`;
    })}
  </svg>
</figure>`;
}

export function renderUsage(data: UsageData, options: { days: number; owner?: { kind: string; id: string } }): Html {
  const ownerName = options.owner ? `${options.owner.kind} ${options.owner.id}` : "all chats";
  const perDay = data.days.map((day) => ({ day: day.day, figures: day.owner ?? day.all }));
  const ownerLink = (kind: string, name: string) => `/console/usage?days=${options.days}&${kind}=${encodeURIComponent(name)}`;
  const saved = data.days.reduce((sum, day) => sum + day.saved, 0);
  const compactions = data.days.reduce((sum, day) => sum + day.compactions, 0);
  return html`<form method="get" action="/console/usage" class="search">
  <label for="days">Period</label>
  <select id="days" name="days">${PERIODS_DAYS.map((days) => html`<option value="${days}"${new Html(days === options.days ? " selected" : "")}>last ${days} days</option>`)}</select>
  ${options.owner ? html`<input type="hidden" name="${options.owner.kind}" value="${options.owner.id}">` : ""}
  <button type="submit">Show</button>
  ${options.owner ? html` <a href="/console/usage?days=${options.days}">Show all chats</a>` : ""}
</form>
<section aria-labelledby="per-day">
  <h2 id="per-day">Per day: ${ownerName}</h2>
  ${bars(`Cost per day, ${ownerName}`, perDay.map((row) => ({ label: row.day, value: row.figures.usd, text: formatUsd(row.figures.usd) })))}
  ${bars(`Tokens per day, ${ownerName}`, perDay.map((row) => ({ label: row.day, value: row.figures.tokens, text: formatTokens(row.figures.tokens) })))}
</section>
<section aria-labelledby="by-owner">
  <h2 id="by-owner">The last ${options.days} days by chat, user and model</h2>
  ${(["chat", "user", "model"] as const).map((kind) => html`<h3>By ${kind}</h3>
  ${data.totals[kind].length === 0 ? html`<p>No usage recorded.</p>` : html`${bars(`Cost by ${kind}, last ${options.days} days`, data.totals[kind].slice(0, 15).map((row) => ({ label: row.owner, value: row.usd, text: `${formatUsd(row.usd)} · ${formatTokens(row.tokens)} tokens` })))}
  <table><thead><tr><th scope="col">${kind}</th><th scope="col">Cost</th><th scope="col">Tokens</th></tr></thead><tbody>
  ${data.totals[kind].slice(0, 50).map((row) => html`<tr><th scope="row"><a href="${ownerLink(kind, row.owner)}">${row.owner}</a></th><td class="number">${formatUsd(row.usd)}</td><td class="number">${formatTokens(row.tokens)}</td></tr>`)}
  </tbody></table>`}`)}
</section>
<section aria-labelledby="savings">
  <h2 id="savings">Compaction savings</h2>
  <p>${compactions} compaction${compactions === 1 ? "" : "s"} in the last ${options.days} days took ${formatTokens(saved)} tokens out of the live contexts (every later request of those chats is that much smaller).</p>
</section>
<section aria-labelledby="budgets">
  <h2 id="budgets">Budgets</h2>
  ${data.budgets.length === 0 ? html`<p>No spending recorded this month.</p>` : html`<table>
    <thead><tr><th scope="col">Account</th><th scope="col">Today</th><th scope="col">This month</th></tr></thead>
    <tbody>${data.budgets.map((budget) => html`<tr><th scope="row">${budget.account}</th>${(["daily", "monthly"] as const).map((period) => html`<td>${slotText(budget.slots.find((slot) => slot.period === period))}</td>`)}</tr>`)}</tbody>
  </table>`}
</section>`;
}

function slotText(slot: SlotStatus | undefined): Html {
  if (!slot) return html`—`;
  const used = `${formatUsd(slot.used.usd)} · ${formatTokens(slot.used.tokens)} tokens`;
  if (slot.limit.usd !== undefined) return html`<meter min="0" max="${slot.limit.usd}" value="${Math.min(slot.used.usd, slot.limit.usd)}" high="${slot.limit.usd * 0.75}" aria-label="${Math.round((slot.used.usd / slot.limit.usd) * 100)}% of the limit"></meter> ${used} of ${formatUsd(slot.limit.usd)}`;
  if (slot.limit.tokens !== undefined) return html`<meter min="0" max="${slot.limit.tokens}" value="${Math.min(slot.used.tokens, slot.limit.tokens)}" high="${slot.limit.tokens * 0.75}" aria-label="${Math.round((slot.used.tokens / slot.limit.tokens) * 100)}% of the limit"></meter> ${used} of ${formatTokens(slot.limit.tokens)} tokens`;
  return html`${used} (no limit)`;
}
