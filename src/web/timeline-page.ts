/**
 * A session's timeline: context tokens per turn against the compaction threshold and the window,
 * each compaction marked by kind with what it folded, tokens saved and the summarizer; cached
 * share and cost per turn (uPlot, from the turn history); the same as tables for readers without
 * JavaScript; the current summary and pins; the conversation's memory as the privacy rules of
 * docs/memory.md allow (its own memory, and a member's only while shared with this chat).
 */
import type { Redis } from "ioredis";
import type { MemoryOwner } from "../core/memory.js";
import { MemoryStore, type MemoryDoc } from "../memory/index.js";
import { sessionKeys } from "../session/keys.js";
import type { SessionState } from "../session/state.js";
import { SessionStore } from "../session/store.js";
import { readTurnHistory, type CompactionMark, type TurnHistoryEntry } from "../session/turn-history.js";
import { formatTokens, formatUsd, html, Html, isoMinute, jsonBlock } from "./html.js";
import { contextMeter } from "./sessions-page.js";

export interface TimelineData {
  state: SessionState;
  history: TurnHistoryEntry[];
  memory: { owner?: MemoryOwner; own?: MemoryDoc; shared: Array<{ user: string; doc: MemoryDoc }> };
}

export async function loadTimeline(redis: Redis, prefix: string, sessionKey: string): Promise<TimelineData | undefined> {
  if ((await redis.exists(sessionKeys(prefix, sessionKey).state)) === 0) return undefined;
  const [state, history] = await Promise.all([new SessionStore(redis, prefix).load(sessionKey), readTurnHistory(redis, prefix, sessionKey)]);
  const memories = new MemoryStore(redis, prefix);
  const owner = state.memory?.owner;
  const own = owner ? await memories.read(owner) : undefined;
  // A member's memory only while both sides record the consent, as a snapshot would take it.
  const shared: Array<{ user: string; doc: MemoryDoc }> = [];
  if (owner?.scope === "chat") {
    for (const user of own?.sharedBy ?? []) {
      const cut = user.indexOf(":");
      const doc = await memories.read({ scope: "user", platform: user.slice(0, cut) as "telegram", userId: user.slice(cut + 1) });
      if (doc.sharedWith?.includes(sessionKey)) shared.push({ user, doc });
    }
  }
  return { state, history, memory: { ...(owner ? { owner } : {}), ...(own ? { own } : {}), shared } };
}

const KIND_LABEL: Record<string, string> = { hygiene: "hygiene", "in-loop": "in-loop", idle: "idle", manual: "manual", overflow: "overflow" };

/** The plot's data: one point per recorded turn; compaction marks by turn index. */
export function plotData(history: readonly TurnHistoryEntry[]) {
  return {
    turns: history.map((entry) => entry.version),
    at: history.map((entry) => entry.at),
    tokens: history.map((entry) => entry.tokens),
    threshold: history.map((entry) => entry.threshold),
    window: history.map((entry) => entry.window),
    cachedShare: history.map((entry) => (entry.prompt > 0 ? Math.round((entry.cached / entry.prompt) * 1_000) / 10 : null)),
    usd: history.map((entry) => entry.usd),
    compactions: history.flatMap((entry, index) => entry.compactions.map((mark) => ({
      index, version: entry.version, kind: KIND_LABEL[mark.reason] ?? mark.reason, saved: Math.max(0, mark.tokensBefore - mark.tokensAfter),
      before: mark.tokensBefore, after: mark.tokensAfter, folded: mark.folded, model: mark.summarizerModel, first: mark.firstId ?? null, last: mark.lastId ?? null,
    }))),
  };
}

const describeMark = (mark: CompactionMark) =>
  `${KIND_LABEL[mark.reason] ?? mark.reason}: folded ${mark.folded} message${mark.folded === 1 ? "" : "s"}${mark.firstId ? ` (${mark.firstId}…${mark.lastId ?? mark.firstId})` : ""}, saved ${formatTokens(Math.max(0, mark.tokensBefore - mark.tokensAfter))} tokens (${formatTokens(mark.tokensBefore)} → ${formatTokens(mark.tokensAfter)}), summarizer ${mark.summarizerModel ?? "none (dropped)"}`;

export function renderTimeline(sessionKey: string, data: TimelineData): Html {
  const { state, history } = data;
  const last = history.at(-1);
  const marks = history.flatMap((entry) => entry.compactions.map((mark) => ({ entry, mark })));
  const summaries = state.live.filter((message) => message.kind === "summary");
  const pins = state.memory?.pins ?? [];
  const totalUsd = history.reduce((sum, entry) => sum + entry.usd, 0);
  return html`<p><a href="/console/sessions">← All sessions</a></p>
<dl class="facts">
  <dt>Context now</dt><dd>${contextMeter(last?.tokens ?? state.stats.lastPromptTokens, last?.window)}</dd>
  <dt>Compactions</dt><dd>${state.stats.compactions} (saved ${formatTokens(state.stats.compactionTokensSaved)} tokens in all)</dd>
  <dt>Model</dt><dd>${state.chat?.model ?? last?.model ?? "default"}</dd>
  <dt>Turns recorded</dt><dd>${history.length} (cost ${formatUsd(totalUsd)})</dd>
  <dt>Last activity</dt><dd>${isoMinute(state.updatedAt)}</dd>
</dl>

<section aria-labelledby="plot-heading">
  <h2 id="plot-heading">Context per turn</h2>
  <p class="legend">Context tokens per turn, with the compaction threshold and the window. Each compaction is a vertical mark labelled with its kind; the list below the plot says what each one folded.</p>
  <div id="timeline-plot" class="plot" role="img" aria-label="Plot of context tokens per turn with ${marks.length} compaction${marks.length === 1 ? "" : "s"} marked"></div>
  <div id="cost-plot" class="plot" role="img" aria-label="Plot of cached share and cost per turn"></div>
  <noscript><p>The plots need JavaScript; the tables below hold the same figures.</p></noscript>
  ${jsonBlock("timeline-data", plotData(history))}
</section>

<section aria-labelledby="compactions-heading">
  <h2 id="compactions-heading">Compactions</h2>
  ${marks.length === 0 ? html`<p>None recorded.</p>` : html`<ol class="compactions">
    ${marks.map(({ entry, mark }) => html`<li data-kind="${mark.reason}">Turn ${entry.version}, ${isoMinute(mark.at)} — ${describeMark(mark)}</li>`)}
  </ol>`}
</section>

<section aria-labelledby="summary-heading">
  <h2 id="summary-heading">Current summary</h2>
  ${summaries.length === 0 ? html`<p>No summary: nothing has been folded in this conversation yet.</p>` : summaries.map((message) => html`<pre class="text">${message.content ?? ""}</pre>`)}
  <h2>Pins</h2>
  ${pins.length === 0 ? html`<p>No pins.</p>` : html`<ul>${pins.map((pin) => html`<li><span class="id">[${pin.id}]</span> ${pin.text}</li>`)}</ul>`}
</section>

${renderMemory(data)}

<section aria-labelledby="turns-heading">
  <h2 id="turns-heading">Turns</h2>
  <table>
    <thead><tr><th scope="col">Turn</th><th scope="col">When</th><th scope="col">Context tokens</th><th scope="col">Threshold / window</th><th scope="col">Cached</th><th scope="col">Cost</th><th scope="col">Compactions</th></tr></thead>
    <tbody>
    ${[...history].reverse().slice(0, 200).map((entry) => html`<tr>
      <th scope="row">${entry.version}${entry.kind === "idle" ? " (idle)" : ""}</th><td>${isoMinute(entry.at)}</td><td class="number">${entry.tokens}</td>
      <td class="number">${formatTokens(entry.threshold)} / ${formatTokens(entry.window)}</td>
      <td class="number">${entry.prompt > 0 ? `${Math.round((entry.cached / entry.prompt) * 100)}%` : "—"}</td>
      <td class="number">${formatUsd(entry.usd)}</td><td>${entry.compactions.map((mark) => KIND_LABEL[mark.reason] ?? mark.reason).join(", ") || "—"}</td>
    </tr>`)}
    </tbody>
  </table>
  ${history.length > 200 ? html`<p>The newest 200 of ${history.length} recorded turns.</p>` : ""}
</section>`;
}

function renderMemory(data: TimelineData): Html {
  const { owner, own, shared } = data.memory;
  const facts = (doc: MemoryDoc | undefined) => (doc && doc.facts.length > 0
    ? html`<ul>${doc.facts.map((fact) => html`<li><span class="id">[${fact.id}]</span> ${fact.text}</li>`)}</ul>`
    : html`<p>No facts.</p>`);
  const whose = owner === undefined ? "none yet" : owner.scope === "user" ? `the user memory of ${owner.platform}:${owner.userId} (a private chat reads its person's memory)` : "this chat's own memory";
  return html`<section aria-labelledby="memory-heading">
  <h2 id="memory-heading">Memory (operators only)</h2>
  <p>This conversation reads ${whose}.${owner?.scope === "chat" ? ` Members whose memory it may read (shared with /memory share in this chat): ${shared.length === 0 ? "none" : shared.map((entry) => entry.user).join(", ")}.` : ""}</p>
  ${facts(own)}
  ${shared.map((entry) => html`<h3>Shared by ${entry.doc.name ?? entry.user} (${entry.user})</h3>${facts(entry.doc)}`)}
  <h3>What the model reads (the snapshot taken at the last compaction or session start)</h3>
  ${data.state.memory?.snapshot ? html`<pre class="text">${data.state.memory.snapshot}</pre>` : html`<p>No snapshot.</p>`}
</section>`;
}
