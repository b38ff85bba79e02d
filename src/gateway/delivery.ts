import { randomUUID } from "node:crypto";
import { DelayedError, UnrecoverableError, Worker, type Job } from "bullmq";
import type { ChannelAdapter, SendOptions } from "../adapters/channel-adapter.js";
import type { OutboundReply, Platform } from "../core/channel.js";
import { errorMessage, PermanentError, RetryableError } from "../errors.js";
import type { Logger } from "../logger.js";
import { PAYLOAD_VERSION, createRedis, deliveryQueueName, logWorkerError, queuePrefixOf, replicaCounter, type DeliveryJobData, type Producers, type RedisAddress } from "../queue/index.js";
import { attemptToken, LeaseKeeper } from "../session/lease.js";
import { DeliveryFencedError, Outbox, type DeliveryStep } from "../session/outbox.js";
import { PreviewRecords } from "../session/previews.js";
import { takePreview } from "./delivery-preview.js";
import type { SessionStore } from "../session/store.js";
import { markStage } from "../core/stages.js";
import { DeliveryHandedBackError, DeliveryShutdown } from "./delivery-shutdown.js";
import { watched } from "../core/deadline.js";

export interface DeliveryWorkerOptions {
  redisAddress: RedisAddress;
  prefix: string;
  store: SessionStore;
  producers: Producers;
  /** One delivery queue is consumed per adapter: the platforms this gateway can send to. */
  adapters: ReadonlyMap<Platform, ChannelAdapter>;
  concurrency: number;
  lockMs: number;
  /** TTL of a session's delivery lease (the same rule as the turn lease: see docs/architecture.md). */
  leaseMs: number;
  /**
   * DELIVERY_MAX_ATTEMPTS: failed attempts at one reply before it is dead-lettered (a
   * RetryableError — network, 5xx — counts against ten times as many: the platform, not the reply).
   */
  maxAttempts?: number;
  /**
   * DELIVERY_STEP_WARN_MS: a step (send, store write) unanswered this long is logged with its
   * chat, reply and part, and again each time this long passes. @defaultValue 30000
   */
  stepWarnMs?: number;
  logger: Logger;
  /** A reply went out (its last part sent) for `sessionKey`. */
  onDelivered?: (platform: Platform, sessionKey: string) => void;
  /** A part whose outcome is unknown (its answer lost after the platform may have acted) was counted as sent. */
  onPartUnconfirmed?: (platform: Platform) => void;
  /** A final took its preview over (the renderer stops rendering it). */
  onPreviewTaken?: (previewId: string) => void;
  /**
   * REDIS_MIN_REPLICAS_ACK: before each reply is sent, this many replicas must hold the
   * delivery lease just renewed (see `replicated` below). 0: no such fence. @defaultValue 0
   */
  minReplicasAck?: number;
  /** How long that WAIT may take. @defaultValue 3000 */
  replicaAckTimeoutMs?: number;
}

/** The session's node did not get the delivery lease onto enough replicas: nothing is sent, the job is retried. */
export class DeliveryReplicasBehindError extends Error {
  override readonly name = "DeliveryReplicasBehindError";
}

/**
 * Sends what turns committed to a session's outbox, in order. One delivery per session at a
 * time, enforced in Redis by a delivery lease (BullMQ's job lock alone is not enough: a stalled
 * job runs twice). Progress is recorded per reply id and part, each record fenced by the lease
 * and checked against the outbox head, so a crash mid-reply resumes after the last part that
 * went out, and a stale record can never skip a part of another reply. A reply's last part is
 * not recorded: FINISH_REPLY, sent right after it, pops the reply.
 */
/** A temporary failure (RetryableError) counts this much less toward dead-lettering: it is the platform's state, not the reply's. */
const TRANSIENT_FACTOR = 10;
/** Writes of a record a replica does not confirm (REDIS_MIN_REPLICAS_ACK) before the job fails: about 30 s with the 3 s WAIT. */
const RECORD_ATTEMPTS = 10;
/**
 * How long after a Discord channel part went on the wire (marked at its gateway's exit) the next
 * gateway resends it with the same nonce: Discord keeps nonces "the past few minutes" (its docs;
 * no figure), so well under that it returns the message it made, never a second one. Marked
 * longer ago, the part is counted as sent (`reply-part-unconfirmed`): never posted twice, at
 * worst lost if it never reached Discord (docs/architecture.md, "Shutdown").
 */
export const NONCE_SAFE_MS = 60_000;
/** DELIVERY_MAX_ATTEMPTS' default (config/schema.ts). */
const DEFAULT_MAX_ATTEMPTS = 3;

export interface DeliveryWorker {
  /**
   * Stops taking parts (each delivery finishes the part in flight, records it and leaves the rest
   * of its reply to the next gateway), then stops the queue workers; safe to call twice.
   */
  close(): Promise<void>;
  /**
   * The process must exit now (its shutdown time ran out): each part in flight is recorded as
   * sent, so the next gateway does not send it again — a part still on the wire (sent to a
   * platform without an idempotency key and not answered: its outcome is unknown, the rule of
   * docs/architecture.md) and a part answered whose own record has not been stored yet.
   */
  recordPartsInFlight(): Promise<void>;
}

export function startDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const gatewayId = randomUUID().slice(0, 8);
  const connection = createRedis(options.redisAddress);
  const log = options.logger.child({ component: "delivery", gatewayId });
  const outbox = new Outbox(options.store.redis, options.store.prefix);
  const previews = new PreviewRecords(options.store.redis, options.store.prefix);
  const stepWarnMs = options.stepWarnMs ?? 30_000;
  /**
   * Every await of a delivery is watched (issue 28 item 9): one that does not answer is logged
   * with its session, chat, reply and part every stepWarnMs, so no chat goes silent without a
   * log line. It is not abandoned: a store write is fenced and lands when Redis answers; a send
   * is ended by its platform client's timeout, and the job retries.
   */
  const watch = <T>(promise: Promise<T>, step: string, where: () => Record<string, unknown>): Promise<T> =>
    watched(promise, stepWarnMs, (elapsedMs) => log.warn({ ...where(), step, elapsedMs }, "delivery-step-overdue"));

  const previewFor = (reply: OutboundReply, fromPart: number, previewRecorded: boolean, adapter: ChannelAdapter) =>
    takePreview({ previews, log, onPreviewTaken: options.onPreviewTaken }, reply, fromPart, previewRecorded, adapter);

  /**
   * The final is in the chat: records what it left in the preview message (deleted it, or — a
   * preview-only reply — edited its text in). An interim edit that outlived its hold (a stalled
   * gateway) may have landed after the final took the preview; whichever of the two learns of
   * the other second puts the final back (the renderer, or here): so no interim edit stays over
   * a delivered final (issue 28 item 5).
   */
  const settlePreview = async (reply: OutboundReply, adapter: ChannelAdapter, preview: NonNullable<SendOptions["preview"]>): Promise<void> => {
    const previewId = reply.preview;
    if (previewId === undefined || !adapter.previews) return;
    const late = await previews.shown(reply.sessionKey, previewId, preview.only ? reply.text : "");
    if (!late) return;
    log.warn({ sessionKey: reply.sessionKey, chatId: reply.target.chatId, replyId: reply.replyId }, "preview-edit-landed-over-final; putting the final back");
    if (preview.only) await adapter.send(reply, { fromPart: 0, preview, onPartSent: () => Promise.resolve() });
    else await adapter.previews.remove(reply.target, preview.messageId);
  };

  /**
   * Sessions this gateway is delivering now. The lease cannot stop a second attempt at a session
   * in this process while the first has a part in flight: a freeze longer than the job's lock and
   * the lease (the process stopped, or starved of CPU with its event loop seconds behind) makes
   * BullMQ run the stalled job again here, and the re-run may take the lapsed lease before the
   * first attempt's heartbeat renews it — both then send that part. A second attempt here waits
   * for the first instead, without touching Redis; between gateways the lease decides (the floor
   * of docs/architecture.md). faults/delivery-lease-lapse.test.ts.
   */
  const delivering = new Set<string>();
  /** Stopping (`close`) and the parts in flight at the exit (`recordPartsInFlight`): delivery-shutdown.ts. */
  const shutdown = new DeliveryShutdown({ outbox, leaseMs: options.leaseMs, log, onPartUnconfirmed: options.onPartUnconfirmed });

  const deliver = async (job: Job<DeliveryJobData>, jobToken?: string) => {
    if (job.data.v !== PAYLOAD_VERSION) throw new UnrecoverableError(`unknown delivery payload version ${String(job.data.v)}`);
    const { sessionKey } = job.data;
    if (delivering.has(sessionKey)) {
      await job.moveToDelayed(Date.now() + 250, jobToken);
      throw new DelayedError();
    }
    delivering.add(sessionKey);
    try {
      await deliverSession(job, sessionKey, jobToken);
    } finally {
      delivering.delete(sessionKey);
    }
  };

  const deliverSession = async (job: Job<DeliveryJobData>, sessionKey: string, jobToken?: string) => {
    markStage("delivery-picked", sessionKey);
    const token = attemptToken(`${gatewayId}:${job.id}`);
    const { leaseMs } = options;
    const leaseKey = options.store.keys(sessionKey).deliveryLease;
    const wanted = options.minReplicasAck ?? 0;
    const counterOfLease = () => (wanted > 0 ? replicaCounter(options.store.redis, [leaseKey]) : Promise.resolve(undefined));
    /**
     * Taken before the write that read the outbox head now in `step` (BEGIN_DELIVERY, or a dead
     * letter's next head): the fence before its send WAITs on that write's own socket (see
     * `replicated`). A head read from a confirmed write (FINISH_REPLY, through `recorded`) needs none.
     */
    let readCounter = await counterOfLease();
    let step: DeliveryStep = await watch(outbox.begin(sessionKey, token, leaseMs), "begin", () => ({ sessionKey }));
    markStage("delivery-begun", sessionKey);
    if (step.status === "busy") {
      // A stalled run of this job (or another gateway) is still sending: wait for it without
      // spending an attempt.
      await job.moveToDelayed(Date.now() + Math.min(2_000, Math.max(250, step.retryInMs)), jobToken);
      throw new DelayedError();
    }
    const lease = new LeaseKeeper(options.store.redis, { key: leaseKey, token, ttlMs: leaseMs });
    /**
     * With replicas, a reply is sent only once a replica holds the lease just renewed, on the
     * same connection (replicaCounter). A master frozen past its failover and woken answers from
     * its stale copy for a moment — the lease, the outbox head, "part recorded" — and all it
     * writes is dropped when it turns replica: a reply read or recorded there is sent again
     * from the new master. Its replica is gone, so the fence fails there, and nothing is sent.
     * The count is taken on the socket that read the head (`readCounter`), not on whichever
     * node the connection names by now: one that followed the failover between the read and the
     * fence (a Cluster's slot map updated, a Sentinel reconnect) renews on the new master, where
     * the begin never arrived, the lease is free and HEARTBEAT takes it, and its replica
     * confirms — a reply only the stale master held was sent, and the new master's turn
     * answered the message again (delivery-stale-head.test.ts).
     */
    const replicated = async (): Promise<void> => {
      if (wanted === 0) return;
      const counter = readCounter ?? await replicaCounter(options.store.redis, [leaseKey]);
      readCounter = undefined;
      if (!(await lease.renewNow())) throw new DeliveryFencedError(`another delivery holds ${sessionKey}`);
      const acked = await counter.count(wanted, options.replicaAckTimeoutMs ?? 3_000);
      if (acked < wanted) throw new DeliveryReplicasBehindError(`${acked} of ${wanted} Redis replicas hold ${sessionKey}'s delivery lease: nothing sent, retry`);
    };
    /**
     * With replicas, what is recorded after a send (a part, the reply's finish) is confirmed the
     * same way before anything more is sent: a master that acknowledged the record and then lost
     * it — frozen past its failover and woken as a stale master for a moment, or killed before
     * passing it on — leaves the new master to send that part again (cluster-failover.test.ts:
     * a one-part reply sent twice). Unconfirmed, the record is written again — both scripts are
     * idempotent (a part recorded again, a reply popped only while it is the head) and, once
     * ioredis follows the failover, land on the new master — until a replica holds it; after
     * RECORD_ATTEMPTS the job fails and its retry resumes from what the store holds.
     */
    const recorded = async <T>(write: () => Promise<T>, final: (result: T) => boolean): Promise<T> => {
      for (let attempt = 1; ; attempt++) {
        const counter = await counterOfLease();
        if (!counter) return write();
        // The master demoted under the write refuses it (READONLY): written again, like an
        // unconfirmed one; a fence (DeliveryFencedError) is no failure to retry.
        const written = await write().then((result) => ({ result }), (error: unknown) => {
          if (error instanceof DeliveryFencedError || attempt >= RECORD_ATTEMPTS) throw error;
          return undefined;
        });
        if (written && final(written.result)) return written.result;
        const acked = written ? await counter.count(wanted, options.replicaAckTimeoutMs ?? 3_000) : 0;
        if (written && acked >= wanted) return written.result;
        if (attempt >= RECORD_ATTEMPTS) throw new DeliveryReplicasBehindError(`${acked} of ${wanted} Redis replicas hold what ${sessionKey}'s delivery recorded after ${attempt} attempts: retry`);
        log.warn({ sessionKey, acked, attempt }, "delivery-record-unconfirmed");
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };
    let settled = false;
    /** Leaves the rest of the session's outbox to the next gateway: the job comes back at once, the lease goes in `finally`. */
    const handBack = async (replyId: string, part: number): Promise<never> => {
      log.info({ sessionKey, replyId, part }, "delivery-handed-back");
      await job.moveToDelayed(Date.now() + 250, jobToken);
      throw new DelayedError();
    };
    try {
      while (step.status === "head") {
        const { reply, previewRecorded } = step;
        let { fromPart } = step;
        if (shutdown.stopping) await handBack(reply.replyId, fromPart);
        try {
          await replicated();
        } catch (error) {
          if (error instanceof DeliveryFencedError) {
            log.warn({ sessionKey, replyId: reply.replyId }, "delivery-superseded");
            return;
          }
          throw error;
        }
        const adapter = options.adapters.get(reply.target.platform);
        if (!adapter) {
          // Not ours to send: hand it to the queue of its platform.
          await options.producers.enqueueDelivery(sessionKey, reply.target.platform);
          return;
        }
        const where = { sessionKey, chatId: reply.target.chatId, replyId: reply.replyId };
        // A Discord part a gateway left on the wire at its exit (DeliveryShutdown): resent within
        // NONCE_SAFE_MS (its nonce returns the message made), counted as sent after.
        const markedAt = reply.target.platform === "discord" ? await watch(outbox.onWireSince(sessionKey, reply.replyId, fromPart), "parts-on-wire", () => where) : undefined;
        if (markedAt !== undefined && Date.now() - markedAt >= NONCE_SAFE_MS) {
          log.warn({ ...where, part: fromPart, onWireMs: Date.now() - markedAt }, "reply-part-unconfirmed");
          options.onPartUnconfirmed?.(reply.target.platform);
          // The reply's last part too: resumed past it, nothing is sent and the reply finishes.
          await recorded(() => outbox.recordPart(sessionKey, token, reply.replyId, fromPart, leaseMs), () => false);
          fromPart += 1;
        }
        let part = fromPart;
        try {
          const { preview, skip } = await watch(previewFor(reply, fromPart, previewRecorded, adapter), "take-preview", () => where);
          if (!skip) {
            markStage("sending", sessionKey);
            await watch(adapter.send(reply, {
              fromPart,
              // The last part is recorded by the finish that follows at once (fenced by the same
              // lease; a crash before either re-sends that part alike): one round trip less.
              onPartSent: async (partIndex, { last, unconfirmed, boundHere }) => {
                // In flight until its record is stored, for an exit before that.
                const inFlight = shutdown.sent(sessionKey, token, reply, partIndex);
                if (unconfirmed) {
                  // Counted as sent, never sent again (docs/architecture.md, "Nothing answered twice").
                  log.warn({ sessionKey, replyId: reply.replyId, chatId: reply.target.chatId, part: partIndex }, "reply-part-unconfirmed");
                  options.onPartUnconfirmed?.(reply.target.platform);
                }
                part = partIndex + 1;
                if (last) return;
                await recorded(() => outbox.recordPart(sessionKey, token, reply.replyId, partIndex, leaseMs), () => false);
                // Stopping: this part is recorded, no other starts (DeliveryHandedBackError).
                shutdown.recorded(sessionKey, inFlight, boundHere);
              },
              onPartRequest: (partIndex, wire, outcome) => shutdown.requested(sessionKey, token, reply, partIndex, wire, outcome),
              onNoncedPart: (partIndex) => shutdown.noncedOnWire(sessionKey, token, reply, partIndex),
              ...(preview ? { preview } : {}),
            }), "send", () => ({ ...where, part }));
            if (preview) await watch(settlePreview(reply, adapter, preview), "settle-preview", () => where);
          }
          options.onDelivered?.(reply.target.platform, sessionKey);
          // Per reply at debug: the turn's info line (turn-committed) already records it, and a
          // delivery that goes wrong logs a warning or an error of its own.
          if (log.isLevelEnabled("debug")) log.debug({ sessionKey, jobId: job.id, replyId: reply.replyId, fromPart }, "reply-delivered");
        } catch (error) {
          if (error instanceof DeliveryHandedBackError) await handBack(reply.replyId, part);
          if (error instanceof DeliveryFencedError) {
            log.warn({ sessionKey, replyId: reply.replyId, err: error }, "delivery-superseded");
            return;
          }
          if (error instanceof RetryableError && error.retryAfterMs !== undefined && jobToken) {
            // The platform said when to come back (a long 429): wait that long without using
            // up an attempt; the sent parts are recorded, so sending resumes where it stopped.
            log.warn({ sessionKey, replyId: reply.replyId, retryAfterMs: error.retryAfterMs }, "delivery-rate-limited");
            await job.moveToDelayed(Date.now() + error.retryAfterMs, jobToken);
            throw new DelayedError();
          }
          if (!(error instanceof PermanentError)) {
            // Bounded: a reply that keeps failing (a bug in rendering it, a script that refuses
            // it, a platform error on this reply alone) is moved aside so what is behind it flows.
            const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
            const limit = error instanceof RetryableError ? maxAttempts * TRANSIENT_FACTOR : maxAttempts;
            readCounter = await counterOfLease();
            const failed = await outbox.fail(reply, token, { limit, error: errorMessage(error), now: Date.now(), leaseMs });
            if (failed.status === "lost") {
              log.warn({ sessionKey, replyId: reply.replyId }, "delivery-superseded");
              return;
            }
            if (failed.status === "retry") throw error;
            log.error({ sessionKey, replyId: reply.replyId, attempts: limit, err: error }, "reply-dead-lettered");
            shutdown.settled(sessionKey);
            step = failed.next;
            continue;
          }
          // The platform refused it for good (chat gone, bot blocked): retrying cannot help,
          // and the replies queued behind it must not wait forever.
          log.error({ sessionKey, replyId: reply.replyId, err: error }, "reply-undeliverable");
        }
        // FINISH_REPLY releases the lease when the outbox is empty: no heartbeat may follow it.
        const finish = (): Promise<DeliveryStep> => watch(lease.paused(
          () => recorded(() => outbox.finish(sessionKey, token, reply.replyId, leaseMs), (next) => next.status === "lost"),
          (next) => next.status !== "head",
        ), "finish", () => where);
        // The outbox's last reply: settling the session goes out with its finish (one round
        // trip); a reply committed meanwhile, or messages waiting, list the session again.
        if (step.queued === 1) {
          step = await options.store.settleWith(sessionKey, finish, (next) => next.status === "empty" && next.waiting === 0);
          settled = true;
        } else {
          step = await finish();
        }
        // The reply is finished: its last part is recorded with it.
        shutdown.settled(sessionKey);
        if (markedAt !== undefined) await outbox.clearOnWire(sessionKey).catch((error: unknown) => log.warn({ ...where, err: error }, "parts-on-wire-not-cleared"));
      }
      if (step.status === "lost") log.warn({ sessionKey }, "delivery-superseded");
      else if (step.status === "empty" && !settled) await options.store.settle(sessionKey);
    } finally {
      shutdown.settled(sessionKey);
      // An empty outbox released the lease in FINISH_REPLY (and a lost one is not ours): no second round trip.
      const gone = step.status === "empty" || step.status === "lost";
      await (gone ? lease.stop() : lease.release()).catch((error: unknown) => log.warn({ err: error }, "delivery-lease-release-failed"));
    }
  };

  const workers = [...options.adapters.keys()].map((platform) => {
    const worker = new Worker<DeliveryJobData>(deliveryQueueName(platform), deliver, {
      connection, prefix: queuePrefixOf(connection, options.prefix, deliveryQueueName(platform)), concurrency: options.concurrency, lockDuration: options.lockMs, stalledInterval: options.lockMs,
    });
    worker.on("error", (error) => logWorkerError(log, "delivery-worker-error", error));
    worker.on("failed", (job, error) => log.warn({ jobId: job?.id, sessionKey: job?.data.sessionKey, err: error }, "delivery-failed"));
    return worker;
  });
  let closing: Promise<void> | undefined;
  return {
    close() {
      shutdown.stop();
      closing ??= Promise.all(workers.map((worker) => worker.close())).then(() => connection.disconnect());
      return closing;
    },
    recordPartsInFlight: () => shutdown.recordPartsInFlight(),
  };
}
