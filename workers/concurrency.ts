/**
 * How many turns one worker process runs at once when WORKER_CONCURRENCY is unset (issue #32).
 *
 * A turn spends nearly all its time waiting on the model (a first token after ~1 s, then tens of
 * tokens a second): its CPU cost is a few milliseconds, so what bounds the turns a process can
 * hold in flight is memory, not cores. The default is the memory set aside for turns divided by
 * the measured footprint of one turn in flight (`bench/load.ts` prints it: the growth of the
 * worker's RSS per turn in flight at the offered rate), clamped to a range where BullMQ's lock
 * renewals and one Redis connection still keep up.
 */
import { totalmem } from "node:os";
import { getHeapStatistics } from "node:v8";

/**
 * Bytes one turn in flight holds: its session state and live context, the request body being
 * sent, the streamed answer, BullMQ's job and lock timers, one keep-alive socket to the model.
 * Measured by `npm run bench -- load` (docs/benchmarks.md, "Load with a real model's latency": 376–450 KB at 5 messages/s on 2026-12-06); rounded up.
 */
export const TURN_FOOTPRINT_BYTES = 512 * 1024;

/** At most this much memory is planned for turns in flight, whatever the machine: a process stays near 400 MB RSS. */
export const TURN_MEMORY_CAP_BYTES = 192 * 1024 * 1024;

/** Fewer would be the old fixed default; more and BullMQ's one blocking connection and lock renewals fall behind. */
export const MIN_CONCURRENCY = 8;
export const MAX_CONCURRENCY = 500;

export interface MemoryFacts {
  /** The machine's or the container's memory (process.constrainedMemory when a cgroup limits it). */
  systemBytes: number;
  /** V8's heap limit (--max-old-space-size). */
  heapLimitBytes: number;
}

export function memoryFacts(): MemoryFacts {
  // 0 (or undefined on older Nodes) when no cgroup limit applies.
  const constrained = typeof process.constrainedMemory === "function" ? process.constrainedMemory() : 0;
  const system = totalmem();
  return {
    systemBytes: constrained !== undefined && constrained > 0 && constrained < system ? constrained : system,
    heapLimitBytes: getHeapStatistics().heap_size_limit,
  };
}

/**
 * An eighth of the machine's memory (gateway, Redis and other workers share it), a quarter of
 * the heap limit, and never more than TURN_MEMORY_CAP_BYTES, divided by one turn's footprint.
 */
export function defaultWorkerConcurrency(memory: MemoryFacts, footprintBytes = TURN_FOOTPRINT_BYTES): number {
  const budget = Math.min(memory.systemBytes / 8, memory.heapLimitBytes / 4, TURN_MEMORY_CAP_BYTES);
  return Math.max(MIN_CONCURRENCY, Math.min(MAX_CONCURRENCY, Math.floor(budget / footprintBytes)));
}

/** WORKER_CONCURRENCY when set, else the default for this process's memory. */
export function workerConcurrency(configured: number | undefined, memory: MemoryFacts = memoryFacts()): number {
  return configured ?? defaultWorkerConcurrency(memory);
}
