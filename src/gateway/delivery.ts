import { DelayedError, UnrecoverableError, Worker, type Job } from "bullmq";
import type { ChannelAdapter } from "../adapters/channel-adapter.js";
import type { Platform } from "../core/channel.js";
import { PermanentError, RetryableError } from "../errors.js";
import type { Logger } from "../logger.js";
import { DELIVERY_QUEUE, PAYLOAD_VERSION, createRedis, type DeliveryJobData } from "../queue/index.js";
import type { SessionStore } from "../session/store.js";

export interface DeliveryWorkerOptions {
  redisUrl: string;
  prefix: string;
  store: SessionStore;
  adapters: ReadonlyMap<Platform, ChannelAdapter>;
  concurrency: number;
  lockMs: number;
  logger: Logger;
  onDelivered?: (platform: Platform) => void;
}

/**
 * Sends what turns committed to a session's outbox, in order, one session at a time
 * (deduplicated jobs). Progress is recorded per part, so a crash mid-reply resumes after the
 * last part that went out, and a reply is popped only once fully sent: never lost, never
 * sent twice by a retry.
 */
export function startDeliveryWorker(options: DeliveryWorkerOptions): { close(): Promise<void> } {
  const connection = createRedis(options.redisUrl);
  const log = options.logger.child({ component: "delivery" });
  const worker = new Worker<DeliveryJobData>(
    DELIVERY_QUEUE,
    async (job: Job<DeliveryJobData>, token?: string) => {
      if (job.data.v !== PAYLOAD_VERSION) throw new UnrecoverableError(`unknown delivery payload version ${String(job.data.v)}`);
      const { sessionKey } = job.data;
      const { store } = options;
      for (let head = await store.outboxHead(sessionKey); head; head = await store.outboxHead(sessionKey)) {
        const { reply, fromPart } = head;
        const adapter = options.adapters.get(reply.target.platform);
        if (!adapter) throw new Error(`no ${reply.target.platform} adapter in this gateway`);
        try {
          await adapter.send(reply, {
            fromPart,
            onPartSent: (partIndex) => store.recordPartSent(sessionKey, partIndex),
          });
          options.onDelivered?.(reply.target.platform);
          log.info({ sessionKey, jobId: job.id, replyId: reply.replyId }, "reply-delivered");
        } catch (error) {
          if (error instanceof RetryableError && error.retryAfterMs !== undefined && token) {
            // The platform said when to come back (a long 429): wait that long without using
            // up an attempt; the sent parts are recorded, so sending resumes where it stopped.
            log.warn({ sessionKey, replyId: reply.replyId, retryAfterMs: error.retryAfterMs }, "delivery-rate-limited");
            await job.moveToDelayed(Date.now() + error.retryAfterMs, token);
            throw new DelayedError();
          }
          // The platform refused it for good (chat gone, bot blocked): retrying cannot help,
          // and the replies queued behind it must not wait forever.
          if (!(error instanceof PermanentError)) throw error;
          log.error({ sessionKey, replyId: reply.replyId, err: error }, "reply-undeliverable");
        }
        await store.popOutbox(sessionKey, reply.replyId);
      }
      await store.settle(sessionKey);
    },
    { connection, prefix: options.prefix, concurrency: options.concurrency, lockDuration: options.lockMs, stalledInterval: options.lockMs },
  );
  worker.on("error", (error) => log.error({ err: error }, "delivery-worker-error"));
  worker.on("failed", (job, error) => log.warn({ jobId: job?.id, sessionKey: job?.data.sessionKey, err: error }, "delivery-failed"));
  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= worker.close().then(() => connection.disconnect());
      return closing;
    },
  };
}
