/**
 * Builds everything the worker role needs from the config: Redis, the session store, the
 * LLM clients, the tools, the context engine binding, and the BullMQ turn worker.
 */
import type { Config } from "../config/index.js";
import { mainApiKey, minReplicasAckOf, streamingModeFor } from "../config/index.js";
import type { TurnEngine } from "../src/agent/index.js";
import { createMemoryHooks, createMemoryTool, exportUserData, MemoryService, MemoryStore } from "../src/memory/index.js";
import { createModelRouter } from "../src/models/router.js";
import { BudgetMeter, budgetAccounts, LimitsCache, meteredClient, speechCost, transcriptionCost, transcriptionEstimate } from "../src/budget/index.js";
import { createFetchUrlTool, createPageFetcher, createRecallTool, currentTimeTool, delegateTool, McpManager, publicAddressPolicy, ToolCatalog, type Tool } from "../src/tools/index.js";
import { MB } from "../src/core/attachments.js";
import { UPLOAD_MAX_BYTES } from "../src/core/channel.js";
import { RecentWaits } from "../src/core/queue-wait.js";
import { createMediaEngine, createSpeaker, extractText, redisExtractionMemory, redisVisionMemory } from "../src/media/index.js";
import type { Logger } from "../src/logger.js";
import type { Metrics } from "../src/metrics.js";
import { AccessControl, accessListsFrom } from "../src/gateway/access.js";
import { approvePairing } from "../src/operator/index.js";
import { CONNECTION_NAMES, createFiringQueue, createIdleQueue, createProducers, createRedis, pingWithin, readConfirmer, type RedisAddress } from "../src/queue/index.js";
import { createScheduleTool, scheduleSettingsFrom, ScheduleService, ScheduleStore } from "../src/schedule/index.js";
import { globalKeys } from "../src/session/keys.js";
import { leaseTtlMs } from "../src/session/lease.js";
import { migrateLayout } from "../src/session/migrate.js";
import { SessionStore } from "../src/session/store.js";
import { ToolOutputStore } from "../src/session/tool-outputs.js";
import { SEARCH_MAX_ENTRIES, SEARCH_TURN_BUDGET_ENTRIES } from "../src/session/transcript-search.js";
import { replicatedInbox, startScheduleWorker } from "./schedule-worker.js";
import { createTestHooks } from "./test-hooks.js";
import { startTurnWorker, type TurnWorker } from "./turn-worker.js";
import { startIdleWorker } from "./idle-worker.js";
import { createTurnRecorder } from "./turn-history-recorder.js";
import { workerConcurrency } from "./concurrency.js";
import { shouldScheduleIdleCompaction, type IdleCompactionSettings } from "../src/agent/idle-compaction.js";

export interface WorkerRole {
  health(): Promise<Record<string, boolean>>;
  close(): Promise<void>;
}

export interface WorkerRoleOptions {
  config: Config;
  redisAddress: RedisAddress;
  logger: Logger;
  metrics: Metrics;
  /** Tools beyond the built-ins and the configured MCP servers (tests add their own). */
  extraTools?: readonly Tool[];
  /** Test-only faults (workers/test-hooks.ts); main.ts turns them on with LONGHAUL_TEST_HOOKS=1. */
  testHooks?: boolean;
  /** Test-only: addresses fetch_url may reach although they are not public (a loopback fixture server). No config key sets it. */
  fetchTestAllow?: readonly string[];
}

/** Resolves once the worker takes jobs: the key layout is migrated before the first turn. */
export async function startWorkerRole(options: WorkerRoleOptions): Promise<WorkerRole> {
  const { config, logger, metrics } = options;
  const prefix = config.REDIS_PREFIX;
  const redis = createRedis(options.redisAddress, { connectionName: CONNECTION_NAMES.worker });
  redis.on("error", (error) => logger.warn({ err: error }, "redis-error"));
  // With replicas, a session is un-listed only on a read a replica confirms (WorkList.settle).
  const minReplicasAck = minReplicasAckOf(config);
  const store = new SessionStore(redis, prefix, {
    archiveRetentionMs: config.ARCHIVE_RETENTION_DAYS * 86_400_000,
    ...(minReplicasAck > 0 ? { confirmRead: readConfirmer(redis, minReplicasAck) } : {}),
  });
  const producers = createProducers(redis, prefix);
  const { activityChannel, previewChannel } = globalKeys(prefix);

  // The model catalogue (LLM_* alone is a catalogue of one): each model's client, summarizer
  // and context binding, built on first use. Every client is metered: each call reserves its
  // estimate from the turn's budgets first (the summarizer and the memory flush included).
  // On the store's connection: a settle nobody waits for still runs before the turn's commit.
  // Accounts known to have no limit are not reserved from; an admin's /budget is heard on the
  // subscriber (src/budget/limits-cache.ts).
  const subscriber = createRedis(options.redisAddress, { connectionName: CONNECTION_NAMES.workerEvents, autoResubscribe: false });
  subscriber.on("error", (error) => logger.warn({ err: error }, "redis-subscriber-error"));
  const limits = new LimitsCache({ subscriber, channel: globalKeys(prefix).budgetLimitsChannel, logger });
  // A reservation outlives any call (each attempt's timeout, a minute to spare) before it counts as left behind.
  const reservationMs = Math.max(10 * 60_000, config.LLM_TIMEOUT_MS * (config.LLM_MAX_RETRIES + 1) + 60_000);
  const budget = new BudgetMeter(redis, prefix, config.budgets, Date.now, { logger, limits, reservationMs });
  const models = createModelRouter({
    config, logger, metrics, tools: () => tools.builtinDefinitions(),
    wrap: (client, prices) => meteredClient(client, prices, config.LLM_MAX_OUTPUT_TOKENS),
    // Pictures go to the main model through the vision gate (LLM_VISION); the context engine
    // and the summarizer use the plain client.
    wrapMain: (client) => media.vision.wrap(client),
    hooks: (client) => createMemoryHooks({
      service: memory,
      llm: client,
      flushMaxTokens: config.MEMORY_FLUSH_MAX_TOKENS,
      compactionNotice: config.COMPACTION_NOTICE,
      now: () => Date.now(),
    }),
  });

  const toolOutputs = new ToolOutputStore(redis, prefix, { quotaBytes: config.STORED_ORIGINALS_MB * MB });
  const scheduleStore = new ScheduleStore(redis, prefix);
  const firingQueue = createFiringQueue(redis, prefix);
  const schedule = new ScheduleService({ store: scheduleStore, alarms: firingQueue, settings: scheduleSettingsFrom(config) });

  // /forget re-summarizes with the default model's summarizer.
  const memory = new MemoryService(new MemoryStore(redis, prefix), {
    userMaxChars: config.MEMORY_USER_MAX_CHARS,
    chatMaxChars: config.MEMORY_CHAT_MAX_CHARS,
    pinsMaxChars: config.MEMORY_PINS_MAX_CHARS,
  }, { summarizer: models.summarizer(models.catalogue.default) });

  const mcpServers = config.mcp?.servers ?? {};
  // No server is started here: each connects when a turn first needs it.
  const mcp = Object.keys(mcpServers).length > 0 ? new McpManager({ config: { servers: mcpServers }, logger, clientVersion: "0.1.0" }) : undefined;
  // fetch_url: offered only where access.tools names it; pages become text in the extraction
  // worker, with the document limits.
  const pageFetcher = createPageFetcher(
    { maxBytes: config.FETCH_URL_MAX_KB * 1024, timeoutMs: config.FETCH_URL_TIMEOUT_MS, maxRedirects: config.FETCH_URL_MAX_REDIRECTS },
    publicAddressPolicy(options.fetchTestAllow),
  );
  const extractLimits = { memoryMb: config.EXTRACT_MEMORY_MB, timeoutMs: config.EXTRACT_TIMEOUT_MS, maxPages: config.EXTRACT_MAX_PAGES, maxChars: config.MAX_DOCUMENT_CHARS };
  const fetchUrl = createFetchUrlTool({
    fetcher: pageFetcher,
    maxKb: config.FETCH_URL_MAX_KB,
    toText: (kind, bytes, page, signal) => extractText(kind, bytes, extractLimits, signal, page),
  });
  const tools = new ToolCatalog({
    builtins: [currentTimeTool, createRecallTool(), createScheduleTool(schedule), createMemoryTool(memory), ...(options.extraTools ?? [])],
    optional: [fetchUrl, delegateTool],
    mcp,
    access: config.access?.tools,
    logger,
  });

  const transcribeKey = config.TRANSCRIBE_API_KEY ?? mainApiKey(config);
  const transcribeUrl = config.TRANSCRIBE_BASE_URL ?? config.LLM_BASE_URL;
  const media = createMediaEngine({
    sources: {
      ...(config.TELEGRAM_BOT_TOKEN ? { telegram: { token: config.TELEGRAM_BOT_TOKEN, apiRoot: config.TELEGRAM_API_ROOT, local: config.TELEGRAM_LOCAL_BOT_API } } : {}),
      ...(config.DISCORD_BOT_TOKEN ? { discord: { token: config.DISCORD_BOT_TOKEN, apiRoot: config.DISCORD_API_ROOT } } : {}),
    },
    transcription: {
      baseUrl: transcribeUrl,
      // The main endpoint's LLM_PROVIDER holds for it; another endpoint's profile is detected from its URL.
      ...(config.LLM_PROVIDER && transcribeUrl === config.LLM_BASE_URL ? { provider: config.LLM_PROVIDER } : {}),
      ...(transcribeKey ? { apiKey: transcribeKey } : {}),
      model: config.TRANSCRIBE_MODEL,
      timeoutMs: config.MEDIA_TIMEOUT_MS,
    },
    limits: { maxAudioBytes: config.MAX_AUDIO_MB * MB, maxFileBytes: config.MAX_FILE_MB * MB, timeoutMs: config.MEDIA_TIMEOUT_MS, maxMessageChars: config.MAX_MESSAGE_CHARS,
      extract: { memoryMb: config.EXTRACT_MEMORY_MB, timeoutMs: config.EXTRACT_TIMEOUT_MS, maxPages: config.EXTRACT_MAX_PAGES, maxChars: config.MAX_DOCUMENT_CHARS } },
    extractions: redisExtractionMemory(redis, prefix),
    // A catalogue model's `vision` flag gates pictures for it; unset, LLM_VISION decides.
    vision: { mode: config.LLM_VISION, detail: config.VISION_DETAIL, model: config.LLM_MODEL, memory: redisVisionMemory(redis, prefix), declared: (id) => models.catalogue.visionOf(id) },
    // A transcription is refused like any call when a budget is used up; it costs its minutes at
    // TRANSCRIBE_PRICE_PER_MINUTE and counts the transcript's tokens.
    meter: (call, audio, budget) => budget
      ? budget.pay(transcriptionEstimate(audio, config.TRANSCRIBE_PRICE_PER_MINUTE), call, (text) => transcriptionCost(audio, text, config.TRANSCRIBE_PRICE_PER_MINUTE))
      : call(),
    log: logger,
  });

  // Voice replies (/voice): the speech endpoint falls back like transcription's; each call costs
  // its characters at TTS_PRICE_PER_MILLION_CHARS, paid by the turn's payer.
  const speechKey = config.TTS_API_KEY ?? mainApiKey(config);
  const speechUrl = config.TTS_BASE_URL ?? config.LLM_BASE_URL;
  const speech = createSpeaker({
    baseUrl: speechUrl,
    ...(config.LLM_PROVIDER && speechUrl === config.LLM_BASE_URL ? { provider: config.LLM_PROVIDER } : {}),
    ...(speechKey ? { apiKey: speechKey } : {}),
    model: config.TTS_MODEL,
    voice: config.TTS_VOICE,
    timeoutMs: config.MEDIA_TIMEOUT_MS,
    maxChars: config.TTS_MAX_CHARS,
    showTextFromChars: config.VOICE_SHOW_TEXT_CHARS,
    maxBytes: Math.min(UPLOAD_MAX_BYTES.telegram, UPLOAD_MAX_BYTES.discord),
    meter: (call, characters, budget) => (budget ? budget.pay(speechCost(characters, config.TTS_PRICE_PER_MILLION_CHARS), call, () => speechCost(characters, config.TTS_PRICE_PER_MILLION_CHARS)) : call()),
  });

  const defaultModel = models.bind(models.catalogue.default);

  const access = new AccessControl(redis, prefix, accessListsFrom(config));
  const queueWaits = new RecentWaits();
  const engine: TurnEngine = {
    llm: defaultModel.llm,
    media,
    speech,
    tools,
    context: defaultModel.context,
    models,
    budget,
    // One code path with the CLI and the web console: approvals are logged with who made them.
    pairing: { approve: (code, operator) => approvePairing({ access, logger }, operator, code) },
    personas: config.personas ?? {},
    systemPrompt: config.SYSTEM_PROMPT,
    maxSteps: config.AGENT_MAX_STEPS,
    checkin: { idleMs: config.CHECKIN_IDLE_MIN * 60_000, maxQuietRuns: config.CHECKIN_MAX_QUIET, contextTokens: config.CHECKIN_CONTEXT_TOKENS },
    delegation: { maxSteps: config.DELEGATE_MAX_STEPS, maxTokens: config.DELEGATE_MAX_TOKENS, maxParallel: config.DELEGATE_MAX_PARALLEL },
    maxOutputTokens: config.LLM_MAX_OUTPUT_TOKENS,
    toolOutputMaxChars: config.TOOL_OUTPUT_MAX_CHARS,
    toolOutputs: {
      save: (sessionKey, sessionId, id, text) => toolOutputs.save(sessionKey, sessionId, id, text),
      read: (sessionKey, sessionId, id, offset, length) => toolOutputs.read(sessionKey, sessionId, id, offset, length),
    },
    approval: {
      timeoutMs: config.APPROVAL_TIMEOUT_S * 1_000,
      admins: { telegram: config.ADMIN_TELEGRAM_USERS, discord: config.ADMIN_DISCORD_USERS },
    },
    idleResetMs: config.IDLE_RESET_HOURS * 3_600_000,
    messageTimeStamps: config.MESSAGE_TIMESTAMPS,
    prices: defaultModel.model.prices,
    transcriptReader: (sessionKey) => {
      let budget = SEARCH_TURN_BUDGET_ENTRIES;
      return {
        get: (id) => store.transcriptMessage(sessionKey, id),
        search: async (query, limit, before) => {
          if (budget <= 0) throw new Error(`this turn has read ${SEARCH_TURN_BUDGET_ENTRIES} transcript messages already; answer with what was found`);
          const found = await store.searchTranscript(sessionKey, query, limit, { ...(before === undefined ? {} : { before }), maxEntries: Math.min(SEARCH_MAX_ENTRIES, budget) });
          budget -= found.scanned;
          return found;
        },
      };
    },
    transcriptLength: (sessionKey) => store.transcriptLength(sessionKey),
    now: () => Date.now(),
    timeZone: config.TZ,
    schedule,
    memory,
    exportUser: (user) => exportUserData(redis, prefix, user),
    queue: {
      status: async () => {
        const counts = await producers.turnQueue.getJobCounts("waiting", "prioritized", "active");
        const recent = queueWaits.summary(Date.now());
        // The /status turn itself is one of the running ones.
        return { waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0), running: counts.active ?? 0, ...(recent ? { recent } : {}) };
      },
    },
  };

  // Before taking jobs: building the tokenizer blocks the event loop, which mid-turn would stall
  // lock renewals and, in role "all", the gateway.
  engine.context.warmUp();
  // Before the first turn or firing: every session's keys in the current layout.
  const migration = await migrateLayout(redis, prefix);
  if (!migration.current) logger.warn({ migration }, "key-layout-migrated");
  // Idle-time compaction: scheduled by each commit that leaves a session past the mark.
  // Each commit's entry in its session's turn history (the web console's timeline).
  const recordTurn = createTurnRecorder({ redis, prefix, models, now: () => Date.now() });
  const idle: IdleCompactionSettings = { cacheTtlMs: config.CACHE_TTL_S * 1_000, mark: config.IDLE_COMPACTION_MARK };
  const idleQueue = createIdleQueue(redis, prefix);
  const idleWorker = startIdleWorker({
    redisAddress: options.redisAddress,
    prefix,
    lockMs: config.JOB_LOCK_MS,
    logger,
    deps: {
      store, engine, settings: idle, leaseMs: leaseTtlMs(config.JOB_LOCK_MS),
      enqueueTurn: (sessionKey) => producers.enqueueTurn(sessionKey),
      logger,
      now: () => Date.now(),
      recordTurn,
    },
  });
  const concurrency = workerConcurrency(config.WORKER_CONCURRENCY);
  logger.info({ concurrency, configured: config.WORKER_CONCURRENCY !== undefined }, "worker-concurrency");
  const claimConfirmer = readConfirmer(redis, minReplicasAck, 3_000);
  const worker: TurnWorker = startTurnWorker({
    redisAddress: options.redisAddress,
    prefix,
    concurrency,
    lockMs: config.JOB_LOCK_MS,
    handBackAfterMs: Math.floor(config.SHUTDOWN_TIMEOUT_MS / 2),
    logger,
    deps: {
      store,
      producers,
      engine,
      busyMode: config.BUSY_MODE,
      leaseMs: leaseTtlMs(config.JOB_LOCK_MS),
      publishActivity: async (activity) => {
        await redis.publish(activityChannel, JSON.stringify(activity));
      },
      typingDelayMs: config.TYPING_DELAY_MS,
      streaming: (platform) => streamingModeFor(config, platform),
      previewDelayMs: config.STREAMING_DELAY_MS,
      publishPreview: async (update) => {
        await redis.publish(previewChannel, JSON.stringify(update));
      },
      logger,
      metrics,
      now: () => Date.now(),
      recordTurn,
      onArchived: (sessionKey, sessionId) => toolOutputs.expireArchived(sessionKey, sessionId, config.ARCHIVE_RETENTION_DAYS * 86_400_000),
      afterCommit: async (sessionKey, version, state) => {
        // Most commits of a busy session add nothing: the job this process added follows the session.
        if (await shouldScheduleIdleCompaction(engine, idle, sessionKey, state, logger)) await idleQueue.keepScheduled(sessionKey, version, state.updatedAt, idle.cacheTtlMs);
      },
      ...(options.testHooks ? { hooks: createTestHooks() } : {}),
      queueWaits,
      // With replicas, no tool runs on a claim a stale master answered (process-turn.ts): WAIT up to 3 s, as the ingress.
      ...(minReplicasAck > 0 ? { confirmClaim: (sessionKey: string) => claimConfirmer(store.keys(sessionKey).lease) } : {}),
    },
  });

  const scheduleWorker = startScheduleWorker({
    redisAddress: options.redisAddress,
    prefix,
    lockMs: config.JOB_LOCK_MS,
    service: schedule,
    logger,
    deps: {
      store: scheduleStore,
      alarms: firingQueue,
      inbox: minReplicasAck > 0 ? replicatedInbox(store, minReplicasAck) : store,
      turns: producers,
      chatAllowed: (item) => access.serves({ ...item.chat, userId: item.creator.userId }),
      // A task whose chat or creator has no budget left is delivered as a notice, with no LLM call.
      checkTaskBudget: (item) => budget.check(budgetAccounts(item.sessionKey, { platform: item.chat.platform, userId: item.creator.userId })),
      checkCheckinBudget: (item) => budget.check(budgetAccounts(item.sessionKey, { platform: item.chat.platform, userId: item.creator.userId }), config.CHECKIN_BUDGET_HEADROOM),
      missedGraceMs: config.SCHEDULE_MISSED_GRACE_S * 1_000,
      now: () => Date.now(),
      logger,
    },
  });

  let closing: Promise<void> | undefined;
  return {
    health: async () => ({ redis: await pingWithin(redis) }),
    close() {
      closing ??= (async () => {
        // At once, not one after the other: each close waits on its own queue's master, and on a
        // Cluster or Sentinel one frozen or failing over held the schedule and idle workers'
        // closes 4 and 2 s — the turn worker went on taking jobs meanwhile, and its hand-back
        // clock (SHUTDOWN_TIMEOUT_MS / 2) started too late: the hard exit came first, the running
        // turn not handed back (test/integration/topology/worker-sigterm-frozen-node.test.ts).
        await Promise.all([worker.close(), scheduleWorker.close(), idleWorker.close()]);
        // After the turns: a turn handed back mid-call has let go of its server by now.
        await tools.close();
        await pageFetcher.close();
        await firingQueue.close();
        await idleQueue.close();
        await producers.close();
        limits.close();
        subscriber.disconnect();
        await redis.quit().catch(() => redis.disconnect());
      })();
      return closing;
    },
  };
}
