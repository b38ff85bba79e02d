/**
 * Seeded chaos: many Telegram users chat with a gateway process and two worker processes
 * (webhook mode: the driver posts each chat's updates one at a time and re-posts until it gets
 * a 2xx, as Telegram does), while a seeded schedule SIGKILLs and restarts workers, freezes
 * workers, Redis and the gateway past the lock (SIGSTOP/SIGCONT), and restarts the gateway
 * (SIGTERM and SIGKILL). Answers stream (a silent status message replaced by the final), and
 * some messages ask for a reminder (a schedule tool call, then a firing). Afterwards the checker
 * reads every session's transcript and keys from Redis and every message the fake Telegram
 * received, and counts what was lost, doubled or answered twice, updates never stored, parts
 * and reminders delivered twice, reminders that never fired, and chats left stuck.
 *
 * Used by `npm run chaos -- --seed N --minutes M` (scripts/chaos.ts) and, with one short
 * seed, by test/integration/faults/chaos.test.ts.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Update } from "grammy/types";
import { createRedis } from "../../src/queue/index.js";
import { SessionStore } from "../../src/session/store.js";
import { FakeTelegram } from "../fakes/fake-telegram.js";
import { startFakeLlm, withoutStamp } from "../fakes/fake-llm.js";
import { spawnApp, type AppProcess } from "./app-process.js";
import { audit, seededRandom, type Submitted } from "./audit.js";
import { CHAOS_TOPOLOGIES, startChaosRedis, type ChaosTopology } from "./chaos-redis.js";
import { freePort } from "./redis-server.js";
import { newUserTexts, sleep } from "./stall-run.js";
import { buildForChildProcesses } from "./test-build.js";

export const FAULT_KINDS = ["worker-kill", "worker-pause", "redis-pause", "gateway-term", "gateway-kill", "gateway-pause", "redis-kill"] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
export { CHAOS_TOPOLOGIES, type ChaosTopology };

/** The faults a topology can take: killing the only Redis is not a fault longhaul claims to survive. */
export function faultsFor(topology: ChaosTopology): FaultKind[] {
  return FAULT_KINDS.filter((kind) => kind !== "redis-kill" || topology !== "single");
}

export interface ChaosOptions {
  seed: number;
  /** How long faults are applied and messages sent; then everything drains. */
  durationMs: number;
  /**
   * Keep going past `durationMs` until at least this many faults were applied: on a loaded
   * machine restarts take longer, and a short seed must still be a real chaos run. @defaultValue 0
   */
  minFaults?: number;
  /** Telegram users, one private chat each. @defaultValue 8 */
  users?: number;
  /** Only these faults (to study one). @defaultValue faultsFor(topology) */
  faults?: readonly FaultKind[];
  /**
   * One redis-server; a master, two replicas and three sentinels; or three masters with a replica
   * each. With replicas `redis-pause` freezes a master past its failover, `redis-kill` SIGKILLs
   * it (both brought back as replicas). @defaultValue "single"
   */
  topology?: ChaosTopology;
  /** JOB_LOCK_MS of the processes. @defaultValue 1500 */
  lockMs?: number;
  /**
   * What the users do besides chatting: `reminders` — some messages ask for a reminder in a few
   * seconds (a turn calling the schedule tool, then a firing), `streaming` — the answers stream
   * (STREAMING=progress: a silent status message, then the final sent new and the status
   * deleted). @defaultValue { reminders: true, streaming: true }
   */
  workload?: { reminders?: boolean; streaming?: boolean };
  /** Where process logs go (kept for a failed seed). @defaultValue a temp directory */
  logDir?: string;
  log?: (line: string) => void;
}

export interface ChaosReport {
  seed: number;
  durationMs: number;
  /** Messages Telegram got a 2xx for (stored, as far as it knows). */
  messages: number;
  /** Messages Telegram posted to the webhook that never got a 2xx by the end (delivered by the platform, never received by Redis). */
  unreceived: number;
  /** Messages that asked for a reminder, and reminders delivered. */
  remindersAsked: number;
  remindersDelivered: number;
  /** Recurring reminders asked (each waits for an Approve press), and presses Telegram got a 2xx for. */
  approvalsAsked: number;
  approvalsPressed: number;
  /**
   * Asked, and its request showed in the chat: a message naming the reminder's tag with the
   * Approve button, under one approval id (a request sent again is a part sent twice, counted
   * with the parts).
   */
  approvalsShown: number;
  /** Asked, and no request ever showed, by the end of the run. */
  approvalsUnshown: number;
  /**
   * Of those, the ones the documented floor explains: the request's part was counted as sent
   * after its answer was lost (a `reply-part-unconfirmed` line naming the reply that carried the
   * request: issue 28 item 2), and Telegram had not shown it. Every other unshown request is a failure.
   */
  approvalsUnshownAtUnconfirmedPart: number;
  /** Shown only after the user gave up waiting for it (90 s), so never pressed. */
  approvalsLate: number;
  /** Asked once, requested under two or more approval ids (a turn that asked again). */
  approvalsAskedTwice: number;
  /** Shown, and at the end still waiting in its session: neither answered nor timed out. */
  approvalsPending: number;
  /** A reminder delivered more than once: fired twice, or its post sent twice without the floor's excuse. */
  duplicateReminders: number;
  /** A reminder whose one post was repeated by the delivery floor (a part sent again after its gateway died). */
  duplicateRemindersAtGatewayKill: number;
  /** A reminder whose confirmation reached the chat but which never fired. */
  missingReminders: number;
  /** Chats whose session still had inbox, pending or outbox entries, or a held lease, at the end. */
  stuckChats: number;
  /** Silent status messages (previews) still in a chat at the end: a preview the final did not replace. */
  leftoverStatuses: number;
  /** sendMessage calls the fake Telegram accepted (a 429-refused one is no delivery). */
  parts: number;
  faults: Record<string, number>;
  lost: number;
  doubled: number;
  unanswered: number;
  /**
   * Of those, the ones in a chat where a part's answer was lost and the part counted as sent
   * (reply-part-unconfirmed; the price of never sending a part twice on Telegram, issue 28 item 2).
   */
  unansweredAtUnconfirmedPart: number;
  answeredTwice: number;
  /** The same part delivered twice. */
  duplicateParts: number;
  /**
   * Of those, the ones the documented floor explains: the first copy was the last message the
   * gateway that sent it put in that chat before it was SIGKILLed (or ran out of shutdown time):
   * accepted by the platform, not yet recorded; a later gateway sent it again. Every other
   * duplicate is a failure.
   */
  duplicatePartsAtGatewayKill: number;
  /** Of those, the ones whose gateway was SIGTERMed and ran out of shutdown time (not SIGKILLed). */
  duplicatePartsAtShutdownTimeout: number;
  /** Gateways SIGTERMed that ran out of shutdown time. */
  shutdownTimeouts: number;
  clean: boolean;
  logDir: string;
  details: Record<string, string[]>;
}

const TOKEN = "123456789:CHAOS-token";
const SECRET = "chaos-webhook-secret";
const ID_PATTERN = /\bc\d+-m\d+\b/g;

/** The tag a reminder for message `id` posts: names no message id (the checker counts those as answers). */
const reminderTag = (id: string) => `rem_${id.replace("-", "_")}`;
const REMINDER_PATTERN = /\brem_c\d+_m\d+\b/g;
/** Whether `text` names the tag (a whole word: rem_c2_m1 is not rem_c2_m11). */
const namesTag = (text: string | undefined, tag: string) => text !== undefined && new RegExp(`\\b${tag}\\b`).test(text);

/**
 * The tool step a request resumes (it ends with tool results): the ids and fired-task tags of the
 * batch that made the calls, read from the calls' ids (the model names each call after its batch,
 * as a real model remembers what it was doing: the product may place other exchanges between the
 * batch and the step it resumes after an approval — a fired reminder, a task's answer). `refused`:
 * the ids of calls refused because another approval was waiting; they are answered when that
 * request is, not here.
 */
function resumedStep(messages: Array<{ role: string; content?: unknown; tool_call_id?: string }>): { ids: string[]; tags: string[] } {
  const results = messages.slice(messages.findLastIndex((message) => message.role !== "tool") + 1);
  const ids = new Set<string>();
  const tags = new Set<string>();
  const refused = new Set<string>();
  for (const result of results) {
    const callId = result.tool_call_id ?? "";
    for (const tag of callId.match(REMINDER_PATTERN) ?? []) tags.add(tag);
    for (const id of callId.match(ID_PATTERN) ?? []) (String(result.content).includes("already waiting") ? refused : ids).add(id);
  }
  return { ids: [...ids].filter((id) => !refused.has(id)), tags: [...tags] };
}

/**
 * The model: a seeded latency, an answer naming the messages it answers, now and then a long one
 * (several parts). A batch asking for a reminder first calls the schedule tool (a reminder in
 * 3 s whose text is the message's tag), then answers once the tool result is in — with the tags
 * of the tasks that fired in that batch, which a tool call must not make it forget.
 */
function chaosModel(seed: number) {
  const random = seededRandom(seed ^ 0x5eed);
  return (request: Parameters<typeof newUserTexts>[0]) => {
    const messages = request.body.messages as Array<{ role: string; content?: unknown; tool_call_id?: string }>;
    const afterTool = messages.at(-1)?.role === "tool";
    const texts = afterTool ? [] : newUserTexts(request);
    const step = afterTool ? resumedStep(messages) : undefined;
    const ids = step ? step.ids : texts.flatMap((text) => text.match(ID_PATTERN) ?? []);
    // A fired task's instructions: its post starts with the tag, as a reminder's does.
    const tags = step ? step.tags : [...new Set(texts.flatMap((text) => text.match(REMINDER_PATTERN) ?? []))];
    const asking = texts.filter((text) => text.includes("remind"));
    if (asking.length > 0) {
      // "every": a recurring task, which waits for the asker's Approve button; when it fires,
      // its instructions (the tag) come to the model, which posts them back. Each call's id names
      // the batch (its message ids and fired tags) for the step that resumes it.
      const batch = [...ids, ...tags].join(".");
      return {
        toolCalls: asking.flatMap((text) => (text.match(ID_PATTERN) ?? []).map((id, index) => ({
          id: `chaos.${batch}.${id}.${index}`,
          name: "schedule",
          arguments: text.includes("every")
            ? { action: "create", kind: "task", in: "3s", every: "1d", text: reminderTag(id) }
            : { action: "create", kind: "reminder", in: "3s", text: reminderTag(id) },
        }))),
        delayMs: Math.round(100 + random() * 1_000),
      };
    }
    const long = random() < 0.2;
    // A reply that answers no message (after a tool call, a fired task, an approval's press) gets
    // a nonce of its own, in its first line and its filler: "none" for all of them made two
    // different long replies look like one part sent twice, and a bare "ok" after each of two
    // approvals in one chat did the same (Sentinel chaos seed 11: "ok" twice in two chats).
    // Drawn where the filler's nonce always was: the seeds' workloads stay as they were.
    const nonce = ids.length === 0 ? `none${Math.floor(random() * 1e9)}` : undefined;
    const head = tags.length > 0 ? `⏰ ${tags.join(" ")}${ids.length > 0 ? `\nok ${ids.join(" ")}` : ""}` : `ok ${ids.length > 0 ? ids.join(" ") : nonce}`;
    // Filler lines are unique per reply (so a repeated part is visible) but name no message id.
    const tag = (ids[0] ?? nonce!).replace("-", "_");
    const filler = long ? `\n\n${Array.from({ length: 150 }, (_, line) => `filler ${tag} line ${line} of a long answer that needs several parts`).join("\n")}` : "";
    // Long enough that freezes and kills land in the middle of turns.
    return { text: head + filler, delayMs: Math.round(200 + random() * 2_800) };
  };
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => undefined);
  const lockMs = options.lockMs ?? 1_500;
  const users = options.users ?? 8;
  const logDir = options.logDir ?? join(tmpdir(), `longhaul-chaos-${options.seed}-${Date.now()}`);
  mkdirSync(logDir, { recursive: true });
  const build = process.env.LONGHAUL_TEST_BUILD_DIR ? undefined : buildForChildProcesses();
  const random = seededRandom(options.seed);

  const topology = options.topology ?? "single";
  const workload = { reminders: options.workload?.reminders ?? true, streaming: options.workload?.streaming ?? true };
  const redis = await startChaosRedis(topology);
  const llm = await startFakeLlm();
  llm.setHandler(chaosModel(options.seed));
  const telegram = await FakeTelegram.start({ token: TOKEN });
  const port = await freePort();
  const webhookUrl = `http://127.0.0.1:${port}/telegram/webhook`;
  const chatIds = Array.from({ length: users }, (_, index) => 7_000_000_001 + index);
  const prefix = `chaos${options.seed}`;
  const env: Record<string, string> = {
    ...redis.env,
    REDIS_PREFIX: prefix,
    LLM_BASE_URL: llm.url,
    LLM_API_KEY: "sk-chaos",
    LLM_MODEL: "gpt-4o-mini",
    LLM_TIMEOUT_MS: "15000",
    JOB_LOCK_MS: String(lockMs),
    // Streaming finals: a silent status message (not a reply part: the checker leaves silent
    // sends out), then the answer sent as new messages and the status deleted.
    STREAMING: workload.streaming ? "progress" : "off",
    STREAMING_DELAY_MS: "300",
    SHUTDOWN_TIMEOUT_MS: "6000",
    RATE_LIMIT_PER_MINUTE: "0",
    CONSOLE: "off",
    LOG_LEVEL: "info",
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    ALLOWED_TELEGRAM_USERS: chatIds.join(","),
    WORKER_CONCURRENCY: "4",
  };

  // Processes, restarted by the schedule; every incarnation's log is kept.
  const incarnations = new Map<string, number>();
  const apps: AppProcess[] = [];
  const saveLog = (name: string, app: AppProcess) => {
    apps.push(app);
    const count = (incarnations.get(name) ?? 0) + 1;
    incarnations.set(name, count);
    void app.exited().then(() => writeFileSync(join(logDir, `${name}-${count}.log`), app.stderr()));
  };
  /**
   * Each gateway incarnation's life: from its spawn until it was stopped, and whether it died
   * (SIGKILL, or a SIGTERM whose shutdown ran out of time) rather than stopped cleanly.
   * Gateways never overlap (the next one is spawned once the last one exited), so the time the
   * fake Telegram received a call names the incarnation that sent it — a request the dying
   * process had written still arrives before the next one is spawned.
   */
  const gatewayLives: Array<{ start: number; killed: boolean; timedOut?: boolean }> = [];
  const startGateway = async () => {
    gatewayLives.push({ start: Date.now(), killed: false });
    const app = spawnApp({ ...env, LONGHAUL_ROLE: "gateway", HTTP_PORT: String(port), TELEGRAM_WEBHOOK_URL: webhookUrl, TELEGRAM_WEBHOOK_SECRET: SECRET });
    saveLog("gateway", app);
    // A loaded two-core machine can take a minute to start a process.
    await app.waitForStderr(/longhaul-ready/, 150_000);
    return app;
  };
  const startWorker = (index: number) => {
    const app = spawnApp({ ...env, LONGHAUL_ROLE: "worker", HTTP_PORT: "0" });
    saveLog(`worker${index}`, app);
    return app;
  };
  let gateway = await startGateway();
  const workers = [startWorker(0), startWorker(1)];
  await Promise.all(workers.map((worker) => worker.waitForStderr(/longhaul-ready/, 150_000)));
  log(`seed ${options.seed}: processes up, logs in ${logDir}`);

  // Users: each chat posts its next message only once Telegram got a 2xx for the previous one.
  const submitted: Submitted[] = [];
  const remindersAsked: string[] = [];
  /** Posted to the webhook and never answered 2xx (so far). */
  const unreceived = new Set<string>();
  let updateId = 500_000;
  let messageId = 1;
  let sending = true;
  // Telegram keeps re-posting an update until it gets a 2xx; after the drain it gives up here.
  let posting = true;
  const driveChat = async (chatIndex: number) => {
    const chatRandom = seededRandom(options.seed * 1_000 + chatIndex);
    const chatId = chatIds[chatIndex]!;
    for (let count = 1; sending; count++) {
      await sleep(200 + chatRandom() * 2_500);
      if (!sending) break;
      const id = `c${chatIndex}-m${count}`;
      const roll = chatRandom();
      const text = !workload.reminders || roll >= 0.14 ? id : roll < 0.07 ? `${id} remind me` : `${id} remind me every day`;
      const update = {
        update_id: updateId++,
        message: { message_id: messageId++, date: Math.floor(Date.now() / 1_000), chat: { id: chatId, type: "private", first_name: `User${chatIndex}` }, from: { id: chatId, is_bot: false, first_name: `User${chatIndex}` }, text },
      } as Update;
      unreceived.add(id);
      let received = false;
      while (posting) {
        const status = await telegram.postWebhook(webhookUrl, update, SECRET).then((response) => response.status, () => 0);
        if (status >= 200 && status < 300) {
          received = true;
          break;
        }
        await sleep(300);
      }
      if (!received) break;
      unreceived.delete(id);
      submitted.push({ sessionKey: `tg:${chatId}`, messageId: id, text });
      if (text !== id) remindersAsked.push(id);
      if (text.includes("every") && !(await approve(chatIndex, chatId, reminderTag(id)))) approvalsGivenUp.push(id);
    }
  };

  /**
   * A recurring reminder waits for the asker's button: the user presses Approve on the request
   * once it shows (a callback_query posted until it gets a 2xx, as Telegram re-delivers).
   * → false when no request showed within 90 s (the checker then looks for it in the whole run).
   */
  const approvalsGivenUp: string[] = [];
  let approvalsPressed = 0;
  const approve = async (chatIndex: number, chatId: number, tag: string): Promise<boolean> => {
    const until = Date.now() + 90_000;
    while (posting && Date.now() < until) {
      const request = telegram.delivered(chatId).find((call) => namesTag(call.visible?.text, tag) && JSON.stringify(call.payload.reply_markup ?? "").includes("approve:"));
      const shown = request && telegram.chatView(chatId).find((message) => message.text === request.visible?.text);
      const data = (request?.payload.reply_markup as { inline_keyboard?: Array<Array<{ callback_data?: string }>> } | undefined)?.inline_keyboard?.[0]?.[0]?.callback_data;
      if (shown && data) {
        const press = telegram.pushCallbackQuery({ id: chatId, first_name: `User${chatIndex}` }, chatId, shown.messageId, data);
        while (posting) {
          const status = await telegram.postWebhook(webhookUrl, press, SECRET).then((response) => response.status, () => 0);
          if (status >= 200 && status < 300) {
            approvalsPressed++;
            return true;
          }
          await sleep(300);
        }
        return false;
      }
      await sleep(250);
    }
    return false;
  };
  const drivers = chatIds.map((_, index) => driveChat(index));

  // The fault schedule.
  const faults: Record<string, number> = {};
  /** The faults applied, in order (kept in the log directory beside every Bot API call, to trace a failed seed). */
  const timeline: string[] = [];
  const pastTheLock = () => Math.round(lockMs * (1.2 + random() * 2));
  const end = Date.now() + options.durationMs;
  const applied = () => Object.values(faults).reduce((sum, count) => sum + count, 0);
  const faultsDue = () => Date.now() < end || applied() < (options.minFaults ?? 0);
  while (faultsDue()) {
    await sleep(1_000 + random() * 2_500);
    if (!faultsDue()) break;
    const kinds = options.faults ?? faultsFor(topology);
    const kind = kinds[Math.floor(random() * kinds.length)]!;
    const index = Math.floor(random() * workers.length);
    faults[kind] = (faults[kind] ?? 0) + 1;
    const line = `${new Date().toISOString()} ${kind}${kind.startsWith("worker") ? ` ${index}` : ""}`;
    timeline.push(line);
    log(`  ${line}`);
    switch (kind) {
      case "worker-kill":
        await workers[index]!.kill("SIGKILL");
        await sleep(300 + random() * 2_000);
        workers[index] = startWorker(index);
        break;
      case "worker-pause":
        workers[index]!.signal("SIGSTOP");
        await sleep(pastTheLock());
        workers[index]!.signal("SIGCONT");
        break;
      case "redis-pause":
        await redis.pause(pastTheLock());
        break;
      case "redis-kill":
        if (!redis.kill) throw new Error(`redis-kill needs replicas (sentinel or cluster), not ${topology}`);
        await redis.kill();
        break;
      case "gateway-term":
        await gateway.kill("SIGTERM");
        // A shutdown past SHUTDOWN_TIMEOUT_MS ends in process.exit mid-work: a crash, not a clean stop.
        if (gateway.stderr().includes("shutdown-timed-out")) Object.assign(gatewayLives.at(-1)!, { killed: true, timedOut: true });
        gateway = await startGateway();
        break;
      case "gateway-pause":
        // A gateway frozen past the lock: its delivery lease and preview claims run out while it
        // holds requests half done, and webhook posts wait on it.
        gateway.signal("SIGSTOP");
        await sleep(pastTheLock());
        gateway.signal("SIGCONT");
        break;
      case "gateway-kill":
        gatewayLives.at(-1)!.killed = true;
        await gateway.kill("SIGKILL");
        await sleep(300 + random() * 1_500);
        gateway = await startGateway();
        break;
    }
  }

  // Drain: no more messages, no more faults; wait until every acknowledged message is answered.
  sending = false;
  // A chat whose last message never gets a 2xx is counted, not waited for forever.
  const postingUntil = setTimeout(() => { posting = false; }, 120_000);
  await Promise.all(drivers);
  clearTimeout(postingUntil);
  log(`seed ${options.seed}: faults over, draining ${submitted.length} messages`);
  // What users received: the fake answers sends over its rate limits with 429 (grammY waits and
  // sends again), and a refused send is no delivery.
  // Silent sends are status messages (previews), not reply parts.
  const sent = () => telegram.delivered().filter((call) => call.payload.disable_notification !== true).map((call) => ({ chatId: String(call.payload.chat_id), text: String(call.payload.text ?? ""), at: call.at }));
  const answered = () => new Set(sent().flatMap((part) => part.text.match(ID_PATTERN) ?? []));
  // A reminder's post (or a fired task's answer) starts with ⏰; the approval request quotes the tag too.
  const reminded = () => new Set(sent().flatMap((part) => (part.text.startsWith("⏰") ? part.text.match(REMINDER_PATTERN) ?? [] : [])));
  const drainUntil = Date.now() + 180_000;
  const drained = () => submitted.every((message) => answered().has(message.messageId)) && remindersAsked.every((id) => reminded().has(reminderTag(id)));
  while (Date.now() < drainUntil && !drained()) await sleep(250);
  // Late duplicates would show up now.
  await sleep(5_000);

  // The checker.
  const client = createRedis(redis.address);
  const store = new SessionStore(client, prefix);
  const transcripts = new Map<string, string[]>();
  for (const chatId of chatIds) {
    const messages = await store.readTranscript(`tg:${chatId}`);
    transcripts.set(`tg:${chatId}`, messages.filter((message) => message.role === "user").map((message) => withoutStamp(String(message.content))));
  }
  // Stuck: work left in a session, or a lease nobody releases, once everything drained.
  let stuckChats = 0;
  for (const chatId of chatIds) {
    const keys = store.keys(`tg:${chatId}`);
    const [inbox, pending, outbox, lease, deliveryLease] = await Promise.all([
      client.llen(keys.inbox), client.llen(keys.pending), client.llen(keys.outbox), client.exists(keys.lease), client.exists(keys.deliveryLease),
    ]);
    if (inbox + pending + outbox + lease + deliveryLease > 0) {
      stuckChats++;
      log(`  stuck tg:${chatId}: inbox ${inbox}, pending ${pending}, outbox ${outbox}, lease ${lease}, delivery lease ${deliveryLease}`);
    }
  }
  // Approvals still waiting in their session at the end (none should: each shown request was pressed).
  const pendingApprovals = new Set<string>();
  for (const chatId of chatIds) {
    const pending = (await store.load(`tg:${chatId}`)).pendingApproval;
    if (pending) pendingApprovals.add(pending.id);
  }
  client.disconnect();
  const parts = sent();
  const reminderParts = parts.flatMap((part) => (part.text.startsWith("⏰") ? part.text.match(REMINDER_PATTERN) ?? [] : []));
  const reminderCounts = new Map<string, number>();
  for (const tag of reminderParts) reminderCounts.set(tag, (reminderCounts.get(tag) ?? 0) + 1);
  const repeatedReminders = [...reminderCounts.entries()].filter(([, count]) => count > 1).map(([tag]) => tag);
  // Asked, confirmed in an answer, never fired.
  const missingReminders = remindersAsked.filter((id) => answered().has(id) && !reminderCounts.has(reminderTag(id)));
  const silentStatuses = new Set(telegram.delivered().filter((call) => call.payload.disable_notification === true).map((call) => `${String(call.payload.chat_id)}\n${String(call.payload.text ?? "")}`));
  const leftoverStatuses = chatIds.flatMap((chatId) => telegram.chatView(chatId).filter((message) => silentStatuses.has(`${chatId}\n${message.text}`) && !/\bc\d+-m\d+\b/.test(message.text)));
  const distinct = [...new Map(parts.map((part) => [`${part.chatId}\n${part.text}`, part])).values()];
  const result = audit({
    submitted,
    transcripts,
    // Ids each distinct reply part names: two different replies naming one message = answered twice.
    answers: distinct.map((part) => [...new Set(part.text.match(ID_PATTERN) ?? [])]),
    deliveredIds: parts.map((part) => `${part.chatId}\n${part.text}`),
  });

  // A Telegram part whose answer was lost counts as sent and is never sent again (issue 28 item
  // 2): when Telegram had not acted, the part is missing, at most once and logged
  // (reply-part-unconfirmed). A message unanswered in a chat with such a part is that price.
  const unconfirmedSessions = new Set<string>();
  /** Reply ids with a part counted as sent after its answer was lost. */
  const unconfirmedReplies = new Set<string>();
  /** Every approval request a turn made (committed or not): its id, its session and the reply that carried it. */
  const requestedApprovals: Array<{ approvalId: string; sessionKey: string; replyId: string }> = [];
  for (const app of apps) {
    for (const line of app.stderr().split("\n")) {
      if (!line.includes("reply-part-unconfirmed") && !line.includes("tool-approval-requested")) continue;
      try {
        const entry = JSON.parse(line) as { msg?: unknown; sessionKey?: unknown; replyId?: unknown; approvalId?: unknown };
        if (entry.msg === "reply-part-unconfirmed") {
          unconfirmedSessions.add(String(entry.sessionKey));
          unconfirmedReplies.add(String(entry.replyId));
        } else if (entry.msg === "tool-approval-requested") {
          requestedApprovals.push({ approvalId: String(entry.approvalId), sessionKey: String(entry.sessionKey), replyId: String(entry.replyId) });
        }
      } catch {
        // A line cut by a kill.
      }
    }
  }
  const unansweredAtUnconfirmed = result.unanswered.filter((id) => {
    const message = submitted.find((entry) => entry.messageId === id);
    return message !== undefined && unconfirmedSessions.has(message.sessionKey);
  });

  // A repeat is the floor's when every copy but the last was the last message its gateway
  // incarnation sent to that chat, that incarnation was SIGKILLed, and the next copy came from a
  // later one: the part went out and its gateway died before recording it (a delivery sends
  // nothing more to a chat before recording what it sent). Two copies from one incarnation, across
  // a graceful restart, or with a later message between them, are a part sent twice without a crash.
  const lifeAt = (at: number) => gatewayLives.findLastIndex((life) => life.start <= at);
  const atGatewayKill = result.duplicateReplies.filter((key) => {
    const copies = parts.filter((part) => `${part.chatId}\n${part.text}` === key).sort((a, b) => a.at - b.at);
    return copies.every((copy, index) => {
      const next = copies[index + 1];
      if (next === undefined) return true;
      const life = lifeAt(copy.at);
      const laterInChat = parts.some((part) => part.chatId === copy.chatId && part.at > copy.at && lifeAt(part.at) === life);
      return gatewayLives[life]?.killed === true && lifeAt(next.at) > life && !laterInChat;
    });
  });
  // A reminder delivered twice is the floor's when its posts are one part repeated at a gateway's
  // death (one firing, one reply, its part sent again); two different posts, or a repeat the
  // floor does not explain, are two firings.
  const floorKeys = new Set(atGatewayKill);
  const duplicateReminders = repeatedReminders.filter((tag) => {
    const keys = parts.filter((part) => part.text.startsWith("⏰") && namesTag(part.text, tag)).map((part) => `${part.chatId}\n${part.text}`);
    return new Set(keys).size > 1 || !floorKeys.has(keys[0]!);
  });
  // Of those, the ones whose gateway ran out of shutdown time (SIGTERM): it records the part on
  // the wire before exiting, so only a record Redis did not take in time leaves one.
  const atShutdownTimeout = atGatewayKill.filter((key) => {
    const first = parts.filter((part) => `${part.chatId}\n${part.text}` === key).sort((a, b) => a.at - b.at)[0]!;
    return gatewayLives[lifeAt(first.at)]?.timedOut === true;
  });

  // Approvals, exactly: every recurring reminder asked gets one request, shown in its chat, and
  // pressed (so answered) by the end — unless the request's part was the item-2 floor's.
  const approvalIdsShown = new Set<string>();
  const approvalsUnshown: string[] = [];
  const approvalsAskedTwice: string[] = [];
  const approvalsPendingShown: string[] = [];
  const asked = submitted.filter((message) => message.text.includes("every"));
  for (const message of asked) {
    const tag = reminderTag(message.messageId);
    const chatId = message.sessionKey.slice("tg:".length);
    const ids = new Set(telegram.delivered(chatId).flatMap((call) => {
      const markup = JSON.stringify(call.payload.reply_markup ?? "");
      const id = /"approve:([A-Za-z0-9-]+)"/.exec(markup)?.[1];
      return id !== undefined && namesTag(call.visible?.text, tag) ? [id] : [];
    }));
    for (const id of ids) approvalIdsShown.add(id);
    if (ids.size === 0) approvalsUnshown.push(message.messageId);
    if (ids.size > 1) approvalsAskedTwice.push(message.messageId);
    if ([...ids].some((id) => pendingApprovals.has(id))) approvalsPendingShown.push(message.messageId);
  }
  // An unshown request is the floor's when its session has as many requests that never showed
  // and whose reply had a part counted as sent (reply-part-unconfirmed).
  const lostRequests = new Map<string, number>();
  const lostReplies = new Set<string>();
  for (const request of requestedApprovals) {
    if (approvalIdsShown.has(request.approvalId) || !unconfirmedReplies.has(request.replyId) || lostReplies.has(request.replyId)) continue;
    lostReplies.add(request.replyId);
    lostRequests.set(request.sessionKey, (lostRequests.get(request.sessionKey) ?? 0) + 1);
  }
  const unshownAtUnconfirmed = approvalsUnshown.filter((id) => {
    const sessionKey = submitted.find((entry) => entry.messageId === id)!.sessionKey;
    const left = lostRequests.get(sessionKey) ?? 0;
    if (left === 0) return false;
    lostRequests.set(sessionKey, left - 1);
    return true;
  });
  const approvalsLate = approvalsGivenUp.filter((id) => !approvalsUnshown.includes(id));

  writeFileSync(join(logDir, "faults.log"), `${timeline.join("\n")}\n`);
  writeFileSync(join(logDir, "telegram-calls.jsonl"), telegram.calls.map((call) => JSON.stringify({
    at: new Date(call.at).toISOString(), method: call.method, chat: call.payload.chat_id, message: call.payload.message_id, accepted: call.visible !== undefined, retryAfter: call.retryAfter,
    silent: call.payload.disable_notification === true, text: String(call.payload.text ?? "").slice(0, 60),
  })).join("\n"));
  await gateway.kill("SIGTERM");
  await Promise.all(workers.map((worker) => worker.kill("SIGTERM")));
  await telegram.close();
  await llm.close();
  await redis.dispose();
  if (build) {
    build.remove();
    delete process.env.LONGHAUL_TEST_BUILD_DIR;
  }

  const report: ChaosReport = {
    seed: options.seed,
    durationMs: options.durationMs,
    messages: submitted.length,
    unreceived: unreceived.size,
    remindersAsked: remindersAsked.length,
    remindersDelivered: reminderParts.length,
    approvalsAsked: asked.length,
    approvalsPressed,
    approvalsShown: asked.length - approvalsUnshown.length,
    approvalsUnshown: approvalsUnshown.length,
    approvalsUnshownAtUnconfirmedPart: unshownAtUnconfirmed.length,
    approvalsLate: approvalsLate.length,
    approvalsAskedTwice: approvalsAskedTwice.length,
    approvalsPending: approvalsPendingShown.length,
    duplicateReminders: duplicateReminders.length,
    duplicateRemindersAtGatewayKill: repeatedReminders.length - duplicateReminders.length,
    missingReminders: missingReminders.length,
    stuckChats,
    leftoverStatuses: leftoverStatuses.length,
    parts: parts.length,
    faults,
    lost: result.lost.length,
    doubled: result.doubled.length,
    unanswered: result.unanswered.length,
    unansweredAtUnconfirmedPart: unansweredAtUnconfirmed.length,
    answeredTwice: result.answeredTwice.length,
    duplicateParts: result.duplicateReplies.length,
    duplicatePartsAtGatewayKill: atGatewayKill.length,
    duplicatePartsAtShutdownTimeout: atShutdownTimeout.length,
    shutdownTimeouts: gatewayLives.filter((life) => life.timedOut === true).length,
    clean: false,
    logDir,
    details: {
      lost: result.lost,
      doubled: result.doubled,
      unanswered: result.unanswered.filter((id) => !unansweredAtUnconfirmed.includes(id)),
      unansweredAtUnconfirmedPart: unansweredAtUnconfirmed,
      answeredTwice: result.answeredTwice,
      duplicateParts: result.duplicateReplies.filter((key) => !atGatewayKill.includes(key)).map((key) => key.slice(0, 80)),
      duplicatePartsAtGatewayKill: atGatewayKill.map((key) => key.slice(0, 80)),
      unreceived: [...unreceived],
      duplicateReminders,
      duplicateRemindersAtGatewayKill: repeatedReminders.filter((tag) => !duplicateReminders.includes(tag)),
      missingReminders,
      approvalsUnshown: approvalsUnshown.filter((id) => !unshownAtUnconfirmed.includes(id)),
      approvalsUnshownAtUnconfirmedPart: unshownAtUnconfirmed,
      approvalsLate,
      approvalsAskedTwice,
      approvalsPending: approvalsPendingShown,
      leftoverStatuses: leftoverStatuses.map((message) => message.text.slice(0, 80)),
    },
  };
  report.clean = report.lost + report.doubled + report.unanswered - report.unansweredAtUnconfirmedPart + report.answeredTwice + report.duplicateParts - report.duplicatePartsAtGatewayKill
    + report.unreceived + report.duplicateReminders + report.missingReminders + report.stuckChats
    + report.approvalsUnshown - report.approvalsUnshownAtUnconfirmedPart + report.approvalsLate + report.approvalsAskedTwice + report.approvalsPending === 0;
  writeFileSync(join(logDir, "report.json"), JSON.stringify(report, null, 2));
  return report;
}
