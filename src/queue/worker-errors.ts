/**
 * What a BullMQ worker's `error` event is worth in the logs. After a Redis failover a job's lock
 * can be gone by the time the job ends — written to the master that failed and lost with it, or
 * let lapse while the renewals waited out the failover and the job taken back by the stall
 * check — and BullMQ reports `Missing lock for job … moveToFinished` (or `Lock mismatch`). The
 * job is run again (the stall check hands it out; its own end was not recorded), and that run is
 * fenced (the session lease, the delivery's confirmed records), so this is a warning that says
 * so, not an error for an operator to act on. Everything else stays an error.
 */
import type { Logger } from "../logger.js";

const LOCK_LOST = /^(Missing lock for job|Lock mismatch for job) /;

/** Logs a worker's `error` event as `event` (error level), or as `job-lock-lost` (warning) when the job's lock was lost. */
export function logWorkerError(log: Logger, event: string, error: Error): void {
  if (LOCK_LOST.test(error.message)) {
    log.warn({ err: error, worker: event }, "job-lock-lost");
    return;
  }
  log.error({ err: error }, event);
}
