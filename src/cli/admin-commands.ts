/**
 * What `npm run admin -- …` does, as functions over a Redis connection (the CLI in admin.ts is a
 * thin shell around them; tests call them against a real Redis):
 *
 *   sessions              every session: messages in context and in the transcript, stored size,
 *                         age, last activity, compactions, model; a session whose state cannot
 *                         be read is listed as unreadable (exit code 1), the others still are
 *   show <session>        one session: the same, plus the live context, newest last
 *   export <session>      the state and the whole transcript as JSON
 *   reset <session>       archives the conversation and starts fresh, through the session's inbox
 *                         as a `/new` (fenced like any turn; the chat is told)
 *   delete-user <p:id>    a user's private chat (all its keys), approval, private reminders and
 *                         budget counters
 *   budgets               today's and this month's spend of every account, with its limits
 *   dead-letters [session] replies moved aside after failing for good (dead-letters-command.ts);
 *                         `retry SESSION ID` / `drop SESSION ID` (src/operator)
 *   migrate-to-cluster URL copies the deployment from the Redis at URL to the configured Cluster
 *                         (migrate-to-cluster.ts)
 */
import type { Redis } from "ioredis";
import type { Config } from "../../config/index.js";
import { BudgetMeter, deleteLimits, type SlotStatus } from "../budget/index.js";
import type { InboundMessage, Platform } from "../core/channel.js";
import type { ChatMessage } from "../core/messages.js";
import { errorMessage } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { deleteUserData, exportUserData, parseUserRef } from "../memory/index.js";
import { createFiringQueue, createProducers } from "../queue/index.js";
import { scheduleSettingsFrom, ScheduleService, ScheduleStore } from "../schedule/index.js";
import { globalKeys, sessionKeys } from "../session/keys.js";
import { globEscape, scanAll, scanBatches, unlinkKeys } from "../session/scan.js";
import type { SessionState } from "../session/state.js";
import { SessionStore } from "../session/store.js";
import { forgetInTurnHistory, forgetInUsageLedger } from "../session/turn-history.js";
import { deadLettersCommand, DeadLettersUsageError } from "./dead-letters-command.js";
import { migrateToClusterCommand } from "./migrate-to-cluster.js";

export class AdminUsageError extends Error {
  override readonly name = "AdminUsageError";
}

export interface AdminContext {
  redis: Redis;
  config: Config;
  now: number;
  write(text: string): void;
  /** Where changes an operator makes are logged (operator-action); the CLI logs to stderr. Default: silent. */
  logger?: Logger;
}

export interface SessionSummary {
  sessionKey: string;
  messages: number;
  transcript: number;
  bytes: number;
  createdAt: number;
  updatedAt: number;
  compactions: number;
  model?: string;
}

/** Every session key with a stored state, found by SCAN (never KEYS: it blocks Redis). */
export async function listSessionKeys(redis: Redis, prefix: string): Promise<string[]> {
  const head = `${prefix}:{`;
  const tail = "}:state";
  const found = new Set<string>();
  for (const key of await scanAll(redis, `${prefix}:{*}:state`)) if (key.startsWith(head) && key.endsWith(tail)) found.add(key.slice(head.length, -tail.length));
  return [...found].sort();
}

export async function summarize(redis: Redis, prefix: string, sessionKey: string): Promise<SessionSummary | undefined> {
  const keys = sessionKeys(prefix, sessionKey);
  if ((await redis.exists(keys.state)) === 0) return undefined;
  const [state, transcript] = await Promise.all([new SessionStore(redis, prefix).load(sessionKey), redis.llen(keys.transcript)]);
  const raw = JSON.stringify(state);
  return {
    sessionKey,
    messages: state.live.length,
    transcript,
    bytes: Buffer.byteLength(raw),
    createdAt: state.createdAt,
    updatedAt: state.updatedAt,
    compactions: state.stats.compactions,
    ...(state.chat?.model ? { model: state.chat.model } : {}),
  };
}

const ago = (ms: number) => {
  const minutes = Math.max(0, Math.floor(ms / 60_000));
  if (minutes < 60) return `${minutes}m`;
  if (minutes < 2_880) return `${Math.floor(minutes / 60)}h`;
  return `${Math.floor(minutes / 1_440)}d`;
};
const size = (bytes: number) => (bytes >= 1_048_576 ? `${(bytes / 1_048_576).toFixed(1)}MB` : `${Math.ceil(bytes / 1_024)}KB`);

/** Longest error text shown for an unreadable session (a JSON error quotes the stored text). */
const REASON_MAX_CHARS = 120;

export async function sessionsCommand(context: AdminContext): Promise<number> {
  const prefix = context.config.REDIS_PREFIX;
  const unreadable: Array<{ sessionKey: string; reason: string }> = [];
  // One broken state (corrupt JSON, a key of the wrong type, a shape this version cannot read)
  // must not hide every other session: it is listed with its reason, the rest as usual.
  const summaries = (await Promise.all((await listSessionKeys(context.redis, prefix)).map((key) =>
    summarize(context.redis, prefix, key).catch((error: unknown) => {
      const reason = errorMessage(error);
      unreadable.push({ sessionKey: key, reason: reason.length > REASON_MAX_CHARS ? `${reason.slice(0, REASON_MAX_CHARS)}…` : reason });
      return undefined;
    }))))
    .filter((summary): summary is SessionSummary => summary !== undefined)
    .sort((a, b) => b.updatedAt - a.updatedAt);
  if (summaries.length === 0 && unreadable.length === 0) {
    context.write("No sessions.\n");
    return 0;
  }
  const rows = [["SESSION", "CONTEXT", "TRANSCRIPT", "SIZE", "AGE", "LAST ACTIVITY", "COMPACTIONS", "MODEL"]];
  for (const summary of summaries) {
    rows.push([
      summary.sessionKey, `${summary.messages} msgs`, `${summary.transcript} msgs`, size(summary.bytes),
      ago(context.now - summary.createdAt), `${ago(context.now - summary.updatedAt)} ago`, String(summary.compactions), summary.model ?? "default",
    ]);
  }
  unreadable.sort((a, b) => a.sessionKey.localeCompare(b.sessionKey));
  for (const { sessionKey } of unreadable) rows.push([sessionKey, "unreadable", "-", "-", "-", "-", "-", "-"]);
  context.write(table(rows));
  for (const { sessionKey, reason } of unreadable) context.write(`${sessionKey}: state unreadable: ${reason}\n`);
  return unreadable.length > 0 ? 1 : 0;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => [...(row[column] ?? "")].length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join("  ").trimEnd()).join("\n") + "\n";
}

async function loadState(context: AdminContext, sessionKey: string): Promise<SessionState> {
  const prefix = context.config.REDIS_PREFIX;
  if ((await context.redis.exists(sessionKeys(prefix, sessionKey).state)) === 0) throw new AdminUsageError(`no session ${sessionKey} (see: npm run admin -- sessions)`);
  return new SessionStore(context.redis, prefix).load(sessionKey);
}

const oneLine = (message: ChatMessage) => {
  const text = (message.content ?? "").replace(/\s+/g, " ");
  const calls = message.role === "assistant" && message.tool_calls?.length ? ` [calls ${message.tool_calls.map((call) => call.function.name).join(", ")}]` : "";
  return `${message.id} ${message.at === undefined ? "-" : new Date(message.at).toISOString()} ${message.role}: ${[...text].slice(0, 160).join("")}${[...text].length > 160 ? "…" : ""}${calls}`;
};

export async function showCommand(context: AdminContext, sessionKey: string): Promise<number> {
  const state = await loadState(context, sessionKey);
  const summary = (await summarize(context.redis, context.config.REDIS_PREFIX, sessionKey))!;
  context.write([
    `Session ${sessionKey} (conversation ${state.sessionId}, version ${state.version})`,
    `Created ${new Date(state.createdAt).toISOString()}, last activity ${new Date(state.updatedAt).toISOString()}`,
    `Context: ${summary.messages} messages (${size(summary.bytes)} stored); transcript: ${summary.transcript} messages; compactions: ${state.stats.compactions}`,
    `Tokens: ${state.stats.promptTokens} in (${state.stats.cachedTokens} cached), ${state.stats.completionTokens} out, over ${state.stats.turns} turns`,
    `Model: ${state.chat?.model ?? "default"}${state.chat?.persona ? `; persona: ${state.chat.personaName ?? "custom"}` : ""}; time zone: ${state.chat?.timeZone ?? `default (${context.config.TZ})`}`,
    ...(state.pendingApproval ? [`Waiting for approval: ${state.pendingApproval.waiting.map((call) => call.name).join(", ")}`] : []),
    "",
    "Live context:",
    ...state.live.map(oneLine),
    "",
  ].join("\n"));
  return 0;
}

export async function exportCommand(context: AdminContext, sessionKey: string): Promise<number> {
  const state = await loadState(context, sessionKey);
  const store = new SessionStore(context.redis, context.config.REDIS_PREFIX);
  const transcript = await store.readTranscript(sessionKey);
  context.write(`${JSON.stringify({ sessionKey, exportedAt: new Date(context.now).toISOString(), state, transcript }, null, 2)}\n`);
  return 0;
}

/**
 * A reset goes through the same door as a message: a `/new` in the session's inbox, taken by the
 * next turn (after any running one), so it is fenced like every other change of the session.
 */
export async function resetCommand(context: AdminContext, sessionKey: string): Promise<number> {
  const state = await loadState(context, sessionKey);
  const target = state.lastTarget;
  if (!target) throw new AdminUsageError(`session ${sessionKey} has never answered anyone; nothing to reset`);
  const prefix = context.config.REDIS_PREFIX;
  const store = new SessionStore(context.redis, prefix);
  const message: InboundMessage = {
    platform: target.platform,
    sessionKey,
    messageId: `admin-reset-${context.now}`,
    chatId: target.chatId,
    ...(target.threadId !== undefined ? { threadId: target.threadId } : {}),
    userId: "operator",
    userName: "operator",
    chatType: "private",
    text: "/new",
    sentAt: context.now,
  };
  await store.appendInbox(message, context.now);
  const producers = createProducers(context.redis, prefix);
  try {
    await producers.enqueueTurn(sessionKey);
  } finally {
    await producers.close();
  }
  context.write(`Reset of ${sessionKey} queued: the next turn archives the conversation (${state.live.length} messages in context) and tells the chat.\n`);
  return 0;
}

/** Deletes every key matching `pattern` (SCAN, then UNLINK in batches). → how many. */
async function deleteMatching(redis: Redis, pattern: string): Promise<number> {
  let deleted = 0;
  for await (const keys of scanBatches(redis, pattern)) if (keys.length > 0) deleted += await unlinkKeys(redis, keys);
  return deleted;
}

/**
 * Memory's data-rights deletion (src/memory/user-data.ts: private sessions, archives, tool
 * outputs, memory, consent, pairing, rate counters, reminders), then the user's budget counters
 * and limits.
 */
export async function deleteUserCommand(context: AdminContext, who: string): Promise<number> {
  const user = parseUserRef(who);
  if (!user) throw new AdminUsageError("delete-user needs <platform>:<user id>, e.g. telegram:12345 or discord:98765");
  const { redis, config } = context;
  const prefix = config.REDIS_PREFIX;
  const firingQueue = createFiringQueue(redis, prefix);
  let report;
  try {
    const schedule = new ScheduleService({ store: new ScheduleStore(redis, prefix), alarms: firingQueue, settings: scheduleSettingsFrom(config) });
    report = await deleteUserData(redis, prefix, user, schedule);
  } finally {
    await firingQueue.close();
  }
  const account = `${user.platform === "telegram" ? "tg" : user.platform === "discord" ? "dc" : user.platform}:${user.userId}`;
  // The user's own counters, and those of the private chats just deleted.
  let budgetDeleted = 0;
  for (const owner of [`user:${account}`, ...report.sessions.map((session) => `chat:${session}`)]) {
    budgetDeleted += await deleteMatching(redis, `${globEscape(globalKeys(prefix).budget(owner, ""))}*`);
    budgetDeleted += await deleteLimits(redis, prefix, owner);
  }
  // The console's usage ledger names them and their private chats too.
  await forgetInUsageLedger(redis, prefix, [`user|${user.platform}:${user.userId}`, ...report.sessions.map((session) => `chat|${session}`)], context.now);
  // And the turn history of the group conversations they spoke in names them per entry.
  for await (const keys of scanBatches(redis, `${globEscape(prefix)}:*:turn-history`)) await forgetInTurnHistory(redis, keys, `${user.platform}:${user.userId}`);
  context.write(`Deleted ${who}: ${report.sessions.length} private conversation(s) (${report.sessions.join(", ") || "none"}), ${report.keysDeleted} key(s), ${report.scheduledItems} reminder(s) or task(s).\nBudget counters and limits: ${budgetDeleted} key(s).\n`);
  return 0;
}

/** What is kept about a user, as JSON (memory's data-rights export). */
export async function exportUserCommand(context: AdminContext, who: string): Promise<number> {
  const user = parseUserRef(who);
  if (!user) throw new AdminUsageError("export-user needs <platform>:<user id>, e.g. telegram:12345");
  context.write(`${JSON.stringify(await exportUserData(context.redis, context.config.REDIS_PREFIX, user), null, 2)}\n`);
  return 0;
}

export async function budgetsCommand(context: AdminContext): Promise<number> {
  const { redis, config } = context;
  const meter = new BudgetMeter(redis, config.REDIS_PREFIX, config.budgets, () => context.now);
  const accounts = await meter.accounts();
  if (accounts.length === 0) {
    context.write("No spending recorded this month.\n");
    return 0;
  }
  const rows = [["ACCOUNT", "TODAY", "DAILY LIMIT", "THIS MONTH", "MONTHLY LIMIT"]];
  for (const account of accounts) {
    const status = await meter.status(account.kind === "chat" ? { chat: account.id } : { chat: "-", user: account.id });
    const mine = status.filter((slot) => slot.kind === account.kind);
    const daily = mine.find((slot) => slot.period === "daily")!;
    const monthly = mine.find((slot) => slot.period === "monthly")!;
    rows.push([`${account.kind} ${account.id}`, spent(daily), limitText(daily), spent(monthly), limitText(monthly)]);
  }
  context.write(table(rows));
  return 0;
}

const money = (usd: number) => `$${usd.toFixed(4)}`;
const spent = (slot: SlotStatus) => `${money(slot.used.usd)} / ${slot.used.tokens} tok`;
const limitText = (slot: SlotStatus) => {
  const parts = [slot.limit.usd !== undefined ? `$${slot.limit.usd}` : "", slot.limit.tokens !== undefined ? `${slot.limit.tokens} tok` : ""].filter(Boolean);
  return parts.length > 0 ? parts.join(" + ") : "none";
};

export const ADMIN_USAGE = `usage:
  npm run admin -- sessions                   every session: size, age, last activity, compactions
  npm run admin -- show SESSION               one session and its live context (SESSION: tg:123, dc:456, ...)
  npm run admin -- export SESSION             state and full transcript as JSON (stdout)
  npm run admin -- reset SESSION              archive the conversation and start fresh (the chat is told)
  npm run admin -- delete-user PLATFORM:ID    delete a user's private conversations, archives, memory, reminders,
                                              pairing data and budget counters (docs/memory.md, "Data rights")
  npm run admin -- export-user PLATFORM:ID    print a user's memory and private conversations as JSON
  npm run admin -- budgets                    today's and this month's spend per chat and user
  npm run admin -- dead-letters [SESSION] [--json]
                                              replies moved aside after failing for good, with the error and ID
  npm run admin -- dead-letters retry SESSION ID
                                              send one again (back to its session's outbox)
  npm run admin -- dead-letters drop SESSION ID
                                              discard one
  npm run admin -- migrate-to-cluster OLD_REDIS_URL
                                              copy the deployment from one Redis to the Cluster REDIS_CLUSTER_NODES
                                              names (bot stopped; docs/operator.md, "Moving to a Cluster")`;

export async function runAdmin(context: AdminContext, argv: readonly string[]): Promise<number> {
  const [command, argument] = argv;
  const needs = (what: string) => {
    if (!argument) throw new AdminUsageError(`${command} needs ${what}`);
    return argument;
  };
  switch (command) {
    case "sessions":
      return sessionsCommand(context);
    case "show":
      return showCommand(context, needs("a SESSION key"));
    case "export":
      return exportCommand(context, needs("a SESSION key"));
    case "reset":
      return resetCommand(context, needs("a SESSION key"));
    case "delete-user":
      return deleteUserCommand(context, needs("PLATFORM:ID"));
    case "export-user":
      return exportUserCommand(context, needs("PLATFORM:ID"));
    case "budgets":
      return budgetsCommand(context);
    case "migrate-to-cluster":
      return migrateToClusterCommand({ redis: context.redis, prefix: context.config.REDIS_PREFIX, write: context.write }, needs("the old Redis's URL (its REDIS_URL)"));
    case "dead-letters":
      return deadLettersCommand({ ...context, logger: context.logger ?? silentLogger }, argv.slice(1)).catch((error: unknown) => {
        throw error instanceof DeadLettersUsageError ? new AdminUsageError(error.message) : error;
      });
    default:
      throw new AdminUsageError(command ? `unknown command: ${command}` : "which command?");
  }
}
