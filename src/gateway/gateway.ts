import type { ChannelAdapter } from "../adapters/channel-adapter.js";
import type { PreviewPort } from "../adapters/channel-adapter.js";
import type { InboundMessage, IngressPort, Platform, PreviewUpdate, TurnActivity } from "../core/channel.js";
import { minReplicasAckOf, type Config } from "../../config/index.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import { CONNECTION_NAMES, createFiringQueue, createProducers, createRedis, pingWithin, readConfirmer, type RedisAddress } from "../queue/index.js";
import { scheduleSettingsFrom, ScheduleService, ScheduleStore } from "../schedule/index.js";
import { globalKeys } from "../session/keys.js";
import { leaseTtlMs } from "../session/lease.js";
import { migrateLayout } from "../session/migrate.js";
import { PreviewRecords } from "../session/previews.js";
import { SessionStore } from "../session/store.js";
import { parseCommand } from "../agent/commands/parse.js";
import { AccessControl, accessListsFrom } from "./access.js";
import { RedisChannelCursors } from "./cursors.js";
import { startDeliveryWorker } from "./delivery.js";
import { PreviewRenderer } from "./preview-renderer.js";
import { RedisSendBudget } from "./send-budget.js";
import type { RouteHandler } from "./http-server.js";
import { Ingress } from "./ingress.js";
import { ActivityOrder } from "./activity-order.js";
import { WaitingTyping } from "./waiting-typing.js";

/**
 * Replies this gateway delivers at once. A delivery holds its slot while the send budget holds
 * its final (a borrowed slot, up to 10 s) and for its round trips, so the slots needed are the
 * replies a second times that hold: at 25 a second through Telegram (its budget refilled at
 * about the rate of the finals) a delivery held its slot 1.15 s at the median, 1.6 s at p90
 * (bench/load.ts --stages, load average 15), and 32 slots left committed replies waiting 4 s
 * (p50) for one (commit → delivery-picked). 64 carry the platforms' rates (Telegram ~30,
 * Discord ~45 a second) with holds up to 1.5–2 s; a waiting delivery costs a few KB.
 */
export const DELIVERY_CONCURRENCY = 64;

export interface GatewayOptions {
  config: Config;
  redisAddress: RedisAddress;
  adapters: readonly ChannelAdapter[];
  logger: Logger;
  metrics: Metrics;
}

export interface Gateway {
  ingress: Ingress;
  /** Adapter routes (webhooks) for the HTTP server. */
  routes: ReadonlyMap<string, RouteHandler>;
  /** Component → up? (Redis, each adapter) for /healthz. */
  health(): Promise<Record<string, boolean>>;
  /** The bot left or lost a chat: its scheduled items go (adapters reach it through their IngressPort). */
  chatClosed(platform: Platform, chatId: string): Promise<void>;
  /** Renders the workers' live previews (docs/streaming.md). */
  previews: PreviewRenderer;
  /** Updates the queue-depth gauge; called on each /metrics scrape. */
  refreshQueueDepth(): Promise<void>;
  /** Stops the adapters' intake (first step of shutdown); safe to call twice. */
  stopIntake(): Promise<void>;
  /** Stops intake, then delivery (after the workers handed back: main.ts), then closes Redis; safe to call twice. */
  close(): Promise<void>;
  /** The process exits now, its shutdown time out: parts still in flight are recorded as sent (DeliveryWorker.recordPartsInFlight). */
  recordPartsInFlight(): Promise<void>;
}

/**
 * The gateway role: adapters → ingress; outboxes → adapters; turn activity → typing
 * indicators; webhook routes for the HTTP server.
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { config, logger, metrics } = options;
  const log = logger.child({ role: "gateway" });
  const prefix = config.REDIS_PREFIX;
  // Named for CLIENT LIST (and the round-trip test): who is who on a shared Redis.
  const redis = createRedis(options.redisAddress, { connectionName: CONNECTION_NAMES.gateway });
  const subscriber = createRedis(options.redisAddress, { connectionName: CONNECTION_NAMES.gatewayEvents });
  redis.on("error", (error) => log.warn({ err: error }, "redis-error"));
  subscriber.on("error", (error) => log.warn({ err: error }, "redis-subscriber-error"));

  // With replicas, a session is un-listed only on a read a replica confirms (WorkList.settle).
  const store = new SessionStore(redis, prefix, minReplicasAckOf(config) > 0 ? { confirmRead: readConfirmer(redis, minReplicasAckOf(config)) } : {});
  const producers = createProducers(redis, prefix);
  const migration = await migrateLayout(redis, prefix);
  if (!migration.current) log.warn({ migration }, "key-layout-migrated");
  await store.loadLegacySeenWindow();
  const access = new AccessControl(redis, prefix, accessListsFrom(config));
  const adapters = new Map<Platform, ChannelAdapter>(options.adapters.map((adapter) => [adapter.platform, adapter]));
  const firingQueue = createFiringQueue(redis, prefix);
  const schedule = new ScheduleService({ store: new ScheduleStore(redis, prefix), alarms: firingQueue, settings: scheduleSettingsFrom(config) });
  const cursors = new RedisChannelCursors(redis, prefix);
  const chatClosed = async (platform: Platform, chatId: string) => {
    const removed = await schedule.removeChat(platform, chatId);
    await cursors.forget(platform, chatId);
    log.info({ platform, chatId, removedSchedules: removed }, "chat-closed");
  };

  const ingress = new Ingress({
    store, producers, access, redis, prefix,
    maxMessageChars: config.MAX_MESSAGE_CHARS,
    rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
    minReplicasAck: minReplicasAckOf(config),
    approvalAdmins: { telegram: config.ADMIN_TELEGRAM_USERS, discord: config.ADMIN_DISCORD_USERS },
    logger: log,
    onAccepted: async (message: InboundMessage) => {
      const command = parseCommand(message.text);
      if (command?.name === "stop") await store.requestAbort(message.sessionKey, "stop");
      else if (config.BUSY_MODE === "interrupt" && !command) await store.requestAbort(message.sessionKey, "interrupt");
    },
  });

  const previewPorts = new Map<Platform, PreviewPort>();
  for (const adapter of adapters.values()) if (adapter.previews) previewPorts.set(adapter.platform, adapter.previews);
  const previews = new PreviewRenderer({ records: new PreviewRecords(redis, prefix), ports: previewPorts, logger: log });

  // Typing for a message queued behind busy workers (TYPING_DELAY_MS after it was stored).
  const waitingTyping = new WaitingTyping({
    redis, prefix, delayMs: config.TYPING_DELAY_MS, logger: log,
    start: (activity) => adapters.get(activity.target.platform)?.onActivity?.(activity),
  });
  const delivery = startDeliveryWorker({
    redisAddress: options.redisAddress, prefix, store, producers, adapters,
    concurrency: DELIVERY_CONCURRENCY, lockMs: config.JOB_LOCK_MS, leaseMs: leaseTtlMs(config.JOB_LOCK_MS), maxAttempts: config.DELIVERY_MAX_ATTEMPTS, stepWarnMs: config.DELIVERY_STEP_WARN_MS, logger: log,
    onDelivered: (platform, sessionKey) => {
      metrics.repliesDelivered.inc({ platform });
      waitingTyping.heard(sessionKey);
    },
    onPartUnconfirmed: (platform) => metrics.partsUnconfirmed.inc({ platform }),
    onPreviewTaken: (previewId) => previews.finished(previewId),
    minReplicasAck: minReplicasAckOf(config),
  });

  const { activityChannel, previewChannel } = globalKeys(prefix);
  // A Cluster may deliver a turn's activities out of order: a late one is dropped.
  const activityOrder = new ActivityOrder();
  await subscriber.subscribe(activityChannel, previewChannel);
  subscriber.on("message", (channel: string, raw: string) => {
    if (channel === previewChannel) {
      try {
        previews.accept(JSON.parse(raw) as PreviewUpdate);
      } catch {
        // A malformed preview is dropped: previews are lossy by design.
      }
      return;
    }
    let activity: TurnActivity;
    try {
      activity = JSON.parse(raw) as TurnActivity;
    } catch {
      return;
    }
    waitingTyping.heard(activity.sessionKey);
    if (activityOrder.accept(activity)) adapters.get(activity.target.platform)?.onActivity?.(activity);
    else log.debug({ sessionKey: activity.sessionKey, turnId: activity.turnId, type: activity.type }, "turn-activity-late");
  });

  // What adapters see: the ingress, counted by outcome for /metrics, and where they keep
  // their place in each channel (for catching up after a reconnect).
  const port: IngressPort = {
    admit: (subject) => ingress.admit(subject),
    submit: async (message) => {
      const result = await ingress.submit(message);
      metrics.inbound.inc({ platform: message.platform, result: result.status });
      if (result.status === "accepted") waitingTyping.accepted(message);
      return result;
    },
    moveChat: async (move) => {
      const result = await ingress.moveChat(move);
      // The chat's reminders follow its session; a refused move leaves both where they are.
      if (result !== "target-exists") {
        const moved = await schedule.moveChat(move);
        if (moved > 0) log.info({ platform: move.platform, fromChatId: move.fromChatId, toChatId: move.toChatId, movedSchedules: moved }, "chat-schedules-moved");
      }
      return result;
    },
    chatClosed,
    cursors,
  };
  // One send budget per bot token, shared by every gateway on this Redis (docs/operator.md).
  const sendBudget = config.SEND_BUDGET ? new RedisSendBudget({ redis, prefix, logger: log }) : undefined;
  for (const adapter of adapters.values()) {
    if (sendBudget) adapter.useSendBudget?.(sendBudget, (priority) => metrics.sendBudgetRefusals.inc({ platform: adapter.platform, priority }));
    await adapter.start(port);
    log.info({ platform: adapter.platform }, "adapter-started");
  }

  const health = async (): Promise<Record<string, boolean>> => {
    return { redis: await pingWithin(redis), ...Object.fromEntries([...adapters.values()].map((adapter) => [adapter.platform, adapter.isConnected()])) };
  };
  const refreshQueueDepth = async () => {
    for (const queue of [producers.turnQueue, ...[...adapters.keys()].flatMap((platform) => producers.deliveryQueues.get(platform) ?? [])]) {
      const counts = await queue.getJobCounts("waiting", "delayed", "prioritized");
      metrics.queueDepth.set({ queue: queue.name }, (counts.waiting ?? 0) + (counts.delayed ?? 0) + (counts.prioritized ?? 0));
    }
  };
  const routes = new Map<string, RouteHandler>();
  for (const adapter of adapters.values()) for (const [path, handler] of adapter.httpRoutes ?? []) routes.set(path, handler);

  let stopping: Promise<void> | undefined;
  const stopIntake = () => {
    stopping ??= (async () => {
      for (const adapter of adapters.values()) await adapter.stop().catch((error: unknown) => log.warn({ err: error }, "adapter-stop-failed"));
    })();
    return stopping;
  };
  let closing: Promise<void> | undefined;
  return {
    ingress,
    routes,
    previews,
    health,
    chatClosed,
    refreshQueueDepth,
    stopIntake,
    recordPartsInFlight: () => delivery.recordPartsInFlight(),
    close() {
      closing ??= (async () => {
        await stopIntake();
        waitingTyping.close();
        previews.close();
        await delivery.close();
        await firingQueue.close();
        await producers.close();
        subscriber.disconnect();
        await redis.quit().catch(() => redis.disconnect());
      })();
      return closing;
    },
  };
}
