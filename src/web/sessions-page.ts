/**
 * The Sessions page: every chat with its platform, title, last activity, context meter (the last
 * turn's prompt tokens over its window), compactions and today's cost; searchable, sortable,
 * paged on the server. Rows are read with SCAN and one GET + LINDEX per session, in batches of
 * concurrent commands (a Cluster's keys live on several masters, so no cross-slot pipeline), and
 * kept for a few seconds so paging and sorting do not read everything again.
 */
import type { Redis } from "ioredis";
import type { Platform } from "../core/channel.js";
import { scanBatches } from "../session/scan.js";
import type { SessionState } from "../session/state.js";
import { readUsageLedger, turnHistoryKey, type TurnHistoryEntry } from "../session/turn-history.js";
import { formatAgo, formatTokens, formatUsd, html, Html } from "./html.js";

export interface SessionRow {
  sessionKey: string;
  platform: Platform | "unknown";
  title?: string;
  updatedAt: number;
  /** The live context's size at the last recorded turn (prompt tokens), and its window. */
  tokens: number;
  window?: number;
  compactions: number;
  costToday: number;
  model?: string;
  /** The state could not be read (listed, with what is known). */
  unreadable?: boolean;
}

export const SORTS = ["activity", "session", "tokens", "fill", "compactions", "cost"] as const;
export type Sort = (typeof SORTS)[number];
export const PAGE_SIZE = 50;
/** How long a listing is reused (paging, sorting, searching within it). */
const ROWS_TTL_MS = 5_000;
const BATCH = 200;

export class SessionIndex {
  #cached: { at: number; rows: Promise<SessionRow[]> } | undefined;

  constructor(private readonly redis: Redis, private readonly prefix: string, private readonly now: () => number = Date.now) {}

  rows(): Promise<SessionRow[]> {
    const now = this.now();
    if (!this.#cached || now - this.#cached.at > ROWS_TTL_MS) {
      const rows = this.#read(now);
      this.#cached = { at: now, rows };
      rows.catch(() => {
        if (this.#cached?.rows === rows) this.#cached = undefined;
      });
    }
    return this.#cached.rows;
  }

  /** Forget the listing (after an action that changes it). */
  invalidate(): void {
    this.#cached = undefined;
  }

  async #read(now: number): Promise<SessionRow[]> {
    const head = `${this.prefix}:{`;
    const tail = "}:state";
    const keys = new Set<string>();
    for await (const batch of scanBatches(this.redis, `${this.prefix}:{*}:state`)) {
      for (const key of batch) if (key.startsWith(head) && key.endsWith(tail)) keys.add(key.slice(head.length, -tail.length));
    }
    const costs = (await readUsageLedger(this.redis, this.prefix, new Date(now).toISOString().slice(0, 10))).get("chat");
    const sessionKeys = [...keys];
    const rows: SessionRow[] = [];
    for (let start = 0; start < sessionKeys.length; start += BATCH) {
      const slice = sessionKeys.slice(start, start + BATCH);
      const read = await Promise.all(slice.map((sessionKey) => Promise.all([
        this.redis.get(`${head}${sessionKey}${tail}`),
        this.redis.lindex(turnHistoryKey(this.prefix, sessionKey), -1),
      ])));
      read.forEach(([state, last], index) => rows.push(rowOf(slice[index]!, state, last, costs?.get(slice[index]!)?.usd ?? 0)));
    }
    return rows;
  }
}

function platformOf(sessionKey: string): SessionRow["platform"] {
  if (sessionKey.startsWith("tg:")) return "telegram";
  if (sessionKey.startsWith("dc:")) return "discord";
  if (sessionKey.startsWith("console:")) return "console";
  return "unknown";
}

function rowOf(sessionKey: string, rawState: string | null, rawLast: string | null, costToday: number): SessionRow {
  let last: TurnHistoryEntry | undefined;
  try {
    last = rawLast === null ? undefined : (JSON.parse(rawLast) as TurnHistoryEntry);
  } catch {
    last = undefined;
  }
  const base = { sessionKey, platform: platformOf(sessionKey), costToday, ...(last?.title ? { title: last.title } : {}) };
  try {
    const state = JSON.parse(rawState ?? "") as Omit<SessionState, "live">;
    return {
      ...base,
      ...(state.lastTarget ? { platform: state.lastTarget.platform } : {}),
      updatedAt: state.updatedAt,
      tokens: last?.tokens ?? state.stats.lastPromptTokens,
      ...(last ? { window: last.window } : {}),
      compactions: state.stats.compactions,
      ...(state.chat?.model ?? last?.model ? { model: state.chat?.model ?? last?.model } : {}),
    };
  } catch {
    return { ...base, updatedAt: 0, tokens: 0, compactions: 0, unreadable: true };
  }
}

export interface SessionQuery {
  q: string;
  sort: Sort;
  dir: "asc" | "desc";
  page: number;
}

export function parseQuery(search: URLSearchParams): SessionQuery {
  const sort = SORTS.find((candidate) => candidate === search.get("sort")) ?? "activity";
  const dir = search.get("dir") === "asc" ? "asc" : "desc";
  const page = Math.max(1, Math.floor(Number(search.get("page") ?? "1")) || 1);
  return { q: (search.get("q") ?? "").slice(0, 200), sort, dir, page };
}

const fill = (row: SessionRow) => (row.window ? row.tokens / row.window : 0);

/** The rows matching the search, sorted, and the requested page of them. */
export function selectRows(rows: readonly SessionRow[], query: SessionQuery): { total: number; page: number; pages: number; rows: SessionRow[] } {
  const needle = query.q.trim().toLowerCase();
  const matching = needle === "" ? [...rows] : rows.filter((row) => [row.sessionKey, row.title ?? "", row.model ?? "", row.platform].some((field) => field.toLowerCase().includes(needle)));
  const value = (row: SessionRow): number | string => {
    switch (query.sort) {
      case "session": return row.sessionKey;
      case "tokens": return row.tokens;
      case "fill": return fill(row);
      case "compactions": return row.compactions;
      case "cost": return row.costToday;
      default: return row.updatedAt;
    }
  };
  const sign = query.dir === "asc" ? 1 : -1;
  matching.sort((a, b) => {
    const left = value(a);
    const right = value(b);
    const order = typeof left === "string" ? left.localeCompare(String(right)) : left - (right as number);
    return order !== 0 ? sign * order : a.sessionKey.localeCompare(b.sessionKey);
  });
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_SIZE));
  const page = Math.min(query.page, pages);
  return { total: matching.length, page, pages, rows: matching.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE) };
}

const link = (query: SessionQuery, change: Partial<SessionQuery>) => {
  const next = { ...query, ...change };
  const params = new URLSearchParams();
  if (next.q) params.set("q", next.q);
  params.set("sort", next.sort);
  params.set("dir", next.dir);
  if (next.page > 1) params.set("page", String(next.page));
  return `/console/sessions?${params.toString()}`;
};

export function sessionLink(sessionKey: string): string {
  return `/console/sessions/${encodeURIComponent(sessionKey)}`;
}

export function renderSessions(selection: ReturnType<typeof selectRows>, query: SessionQuery, now: number): Html {
  const header = (sort: Sort, label: string) => {
    const active = query.sort === sort;
    const nextDir = active && query.dir === "desc" ? "asc" : "desc";
    const ariaSort = active ? (query.dir === "asc" ? "ascending" : "descending") : "none";
    return html`<th scope="col" aria-sort="${ariaSort}"><a href="${link(query, { sort, dir: nextDir, page: 1 })}">${label}${active ? (query.dir === "asc" ? " ▲" : " ▼") : ""}</a></th>`;
  };
  const first = selection.total === 0 ? 0 : (selection.page - 1) * PAGE_SIZE + 1;
  const last = Math.min(selection.total, selection.page * PAGE_SIZE);
  return html`<form method="get" action="/console/sessions" role="search" class="search">
  <label for="q">Search sessions</label>
  <input id="q" name="q" type="search" value="${query.q}" placeholder="tg:123, a name, a model">
  <input type="hidden" name="sort" value="${query.sort}"><input type="hidden" name="dir" value="${query.dir}">
  <button type="submit">Search</button>
</form>
<p id="count">Showing ${first}–${last} of ${selection.total} session${selection.total === 1 ? "" : "s"}${query.q ? html` matching “${query.q}”` : ""}.</p>
<table class="sessions">
  <caption class="visually-hidden">Sessions, sorted by ${query.sort} (${query.dir === "asc" ? "ascending" : "descending"})</caption>
  <thead><tr>
    ${header("session", "Session")}<th scope="col">Platform</th><th scope="col">Title</th>
    ${header("activity", "Last activity")}${header("fill", "Context")}${header("compactions", "Compactions")}${header("cost", "Cost today")}
  </tr></thead>
  <tbody>
  ${selection.rows.map((row) => html`<tr>
    <th scope="row"><a href="${sessionLink(row.sessionKey)}">${row.sessionKey}</a></th>
    <td>${row.platform}</td>
    <td>${row.title ?? "—"}${row.unreadable ? html` <strong>(state unreadable)</strong>` : ""}</td>
    <td>${row.updatedAt > 0 ? html`<time datetime="${new Date(row.updatedAt).toISOString()}">${formatAgo(now - row.updatedAt)}</time>` : "—"}</td>
    <td>${contextMeter(row.tokens, row.window)}</td>
    <td class="number">${row.compactions}</td>
    <td class="number">${formatUsd(row.costToday)}</td>
  </tr>`)}
  </tbody>
</table>
<nav aria-label="Pages" class="pager">
  ${selection.page > 1 ? html`<a href="${link(query, { page: selection.page - 1 })}" rel="prev">← Previous</a>` : ""}
  <span>Page ${selection.page} of ${selection.pages}</span>
  ${selection.page < selection.pages ? html`<a href="${link(query, { page: selection.page + 1 })}" rel="next">Next →</a>` : ""}
</nav>`;
}

export function contextMeter(tokens: number, window: number | undefined): Html {
  if (!window) return html`${formatTokens(tokens)} tokens`;
  const percent = Math.round((tokens / window) * 100);
  return html`<meter min="0" max="${window}" value="${Math.min(tokens, window)}" low="${Math.round(window * 0.5)}" high="${Math.round(window * 0.85)}" optimum="0" aria-label="Context: ${percent}% of the window"></meter> ${formatTokens(tokens)} / ${formatTokens(window)} (${percent}%)`;
}
