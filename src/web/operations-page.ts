/**
 * The Operations page: pairing requests to approve or deny, dead letters with their error (retry
 * or drop), queue depths and the oldest job's wait, connected workers, and this gateway's
 * health. Every form posts to an action of src/operator (the CLIs' code path), with the
 * session's CSRF token.
 */
import type { Redis } from "ioredis";
import type { OutboundReply } from "../core/channel.js";
import type { AccessControl, PairingRequest } from "../gateway/access.js";
import type { Producers } from "../queue/index.js";
import { listDeadLetters, type DeadLetter } from "../session/dead-letters.js";
import { csrfField, formatAgo, html, Html, isoMinute } from "./html.js";
import { sessionLink } from "./sessions-page.js";

export interface QueueFigures {
  name: string;
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  /** Age of the oldest waiting job (ms), when one waits. */
  oldestWaitMs?: number;
  workers: number;
}

export interface OperationsData {
  pending: PairingRequest[];
  approved: Array<{ platform: string; users: string[] }>;
  deadLetters: DeadLetter[];
  queues: QueueFigures[];
  health: Record<string, boolean>;
}

/** Dead letters shown (the oldest first per session); the CLI lists them all. */
const LETTERS_SHOWN = 200;

export async function loadOperations(deps: { redis: Redis; prefix: string; access: AccessControl; producers: Producers; health(): Promise<Record<string, boolean>>; now: number }): Promise<OperationsData> {
  const [pending, deadLetters, health] = await Promise.all([
    deps.access.pendingRequests(),
    listDeadLetters(deps.redis, deps.prefix),
    deps.health().catch(() => ({ gateway: false })),
  ]);
  const approved = await Promise.all((["telegram", "discord"] as const).map(async (platform) => ({ platform, users: await deps.access.approvedUsers(platform) })));
  const queues: QueueFigures[] = [];
  for (const queue of [deps.producers.turnQueue, ...deps.producers.deliveryQueues.values()]) {
    const [counts, oldest, workers] = await Promise.all([
      queue.getJobCounts("waiting", "active", "delayed", "failed", "prioritized"),
      queue.getWaiting(0, 0),
      queue.getWorkersCount().catch(() => 0),
    ]);
    const first = oldest[0];
    queues.push({
      name: queue.name,
      waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0), active: counts.active ?? 0, delayed: counts.delayed ?? 0, failed: counts.failed ?? 0,
      ...(first ? { oldestWaitMs: Math.max(0, deps.now - first.timestamp) } : {}),
      workers,
    });
  }
  return { pending: pending.sort((a, b) => a.requestedAt - b.requestedAt), approved, deadLetters, queues, health };
}

const excerpt = (item: unknown) => {
  const text = typeof item === "object" && item !== null ? (item as Partial<OutboundReply>).text ?? JSON.stringify(item) : String(item);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
};

export function renderOperations(data: OperationsData, options: { csrf: string; now: number; notice?: string }): Html {
  return html`${options.notice ? html`<p class="notice" role="status">${options.notice}</p>` : ""}
<section aria-labelledby="pairing">
  <h2 id="pairing">Pairing requests</h2>
  ${data.pending.length === 0 ? html`<p>No pending pairing requests.</p>` : html`<table>
    <thead><tr><th scope="col">User</th><th scope="col">Platform</th><th scope="col">Code</th><th scope="col">Asked</th><th scope="col">Decision</th></tr></thead>
    <tbody>${data.pending.map((request) => html`<tr>
      <th scope="row">${request.userName} <span class="id">(${request.userId})</span></th><td>${request.platform}</td><td><code>${request.code}</code></td>
      <td>${formatAgo(options.now - request.requestedAt)}</td>
      <td class="actions">
        <form method="post" action="/console/pairing/approve">${csrfField(options.csrf)}<input type="hidden" name="code" value="${request.code}"><button type="submit" aria-label="Approve ${request.userName} (${request.platform} user ${request.userId})">Approve</button></form>
        <form method="post" action="/console/pairing/deny">${csrfField(options.csrf)}<input type="hidden" name="code" value="${request.code}"><button type="submit" class="secondary" aria-label="Deny ${request.userName} (${request.platform} user ${request.userId})">Deny</button></form>
      </td>
    </tr>`)}</tbody>
  </table>`}
  ${data.approved.map((entry) => html`<p>Approved on ${entry.platform}: ${entry.users.length === 0 ? "nobody (besides the configured allowlist)" : entry.users.join(", ")}</p>`)}
</section>

<section aria-labelledby="dead-letters">
  <h2 id="dead-letters">Dead letters</h2>
  ${data.deadLetters.length === 0 ? html`<p>No dead letters.</p>` : html`<table>
    <thead><tr><th scope="col">Session</th><th scope="col">When</th><th scope="col">Reply</th><th scope="col">Error</th><th scope="col">Action</th></tr></thead>
    <tbody>${data.deadLetters.slice(0, LETTERS_SHOWN).map((letter) => html`<tr>
      <th scope="row"><a href="${sessionLink(letter.sessionKey)}">${letter.sessionKey}</a><br><span class="id">${letter.id}</span></th>
      <td>${isoMinute(letter.at)}</td><td>${excerpt(letter.item)}</td><td>after ${letter.attempts} attempt${letter.attempts === 1 ? "" : "s"}: ${letter.error}</td>
      <td class="actions">
        <form method="post" action="/console/dead-letters/retry">${csrfField(options.csrf)}<input type="hidden" name="session" value="${letter.sessionKey}"><input type="hidden" name="id" value="${letter.id}"><button type="submit" aria-label="Retry dead letter ${letter.id} of ${letter.sessionKey}">Retry</button></form>
        <form method="post" action="/console/dead-letters/drop">${csrfField(options.csrf)}<input type="hidden" name="session" value="${letter.sessionKey}"><input type="hidden" name="id" value="${letter.id}"><button type="submit" class="secondary" aria-label="Drop dead letter ${letter.id} of ${letter.sessionKey}">Drop</button></form>
      </td>
    </tr>`)}</tbody>
  </table>
  ${data.deadLetters.length > LETTERS_SHOWN ? html`<p>The first ${LETTERS_SHOWN} of ${data.deadLetters.length}; npm run admin -- dead-letters lists them all.</p>` : ""}`}
</section>

<section aria-labelledby="queues">
  <h2 id="queues">Queues and workers</h2>
  <table>
    <thead><tr><th scope="col">Queue</th><th scope="col">Waiting</th><th scope="col">Oldest wait</th><th scope="col">Active</th><th scope="col">Delayed</th><th scope="col">Failed (kept a week)</th><th scope="col">Workers connected</th></tr></thead>
    <tbody>${data.queues.map((queue) => html`<tr>
      <th scope="row">${queue.name}</th><td class="number">${queue.waiting}</td><td class="number">${queue.oldestWaitMs === undefined ? "—" : `${(queue.oldestWaitMs / 1_000).toFixed(1)} s`}</td>
      <td class="number">${queue.active}</td><td class="number">${queue.delayed}</td><td class="number">${queue.failed}</td><td class="number">${queue.workers}</td>
    </tr>`)}</tbody>
  </table>
</section>

<section aria-labelledby="health">
  <h2 id="health">Health of this process</h2>
  <ul class="health">${Object.entries(data.health).map(([name, up]) => html`<li><span class="${up ? "up" : "down"}">${up ? "up" : "DOWN"}</span> ${name}</li>`)}</ul>
</section>`;
}
