import { describe, expect, it } from "vitest";
import { defaultWorkerConcurrency, MAX_CONCURRENCY, MIN_CONCURRENCY, TURN_FOOTPRINT_BYTES, TURN_MEMORY_CAP_BYTES, workerConcurrency } from "../../../workers/concurrency.js";

const GB = 1024 ** 3;
const MB = 1024 ** 2;

describe("the default worker concurrency (WORKER_CONCURRENCY unset)", () => {
  it("is the memory set aside for turns over one turn's footprint: hundreds on an ordinary machine", () => {
    const concurrency = defaultWorkerConcurrency({ systemBytes: 24 * GB, heapLimitBytes: 4 * GB });
    expect(concurrency).toBe(Math.min(MAX_CONCURRENCY, Math.floor(TURN_MEMORY_CAP_BYTES / TURN_FOOTPRINT_BYTES)));
    expect(concurrency).toBeGreaterThanOrEqual(200);
  });

  it("shrinks with a small container (an eighth of its memory) and with a small heap (a quarter of it)", () => {
    expect(defaultWorkerConcurrency({ systemBytes: 512 * MB, heapLimitBytes: 4 * GB }, MB)).toBe(64);
    expect(defaultWorkerConcurrency({ systemBytes: 24 * GB, heapLimitBytes: 256 * MB }, MB)).toBe(64);
  });

  it("stays within its bounds however large or small the machine or the footprint", () => {
    expect(defaultWorkerConcurrency({ systemBytes: 16 * MB, heapLimitBytes: 64 * MB })).toBe(MIN_CONCURRENCY);
    expect(defaultWorkerConcurrency({ systemBytes: 1024 * GB, heapLimitBytes: 64 * GB }, 1024)).toBe(MAX_CONCURRENCY);
  });

  it("is what WORKER_CONCURRENCY says when it is set", () => {
    expect(workerConcurrency(3, { systemBytes: 24 * GB, heapLimitBytes: 4 * GB })).toBe(3);
    expect(workerConcurrency(undefined, { systemBytes: 24 * GB, heapLimitBytes: 4 * GB })).toBe(defaultWorkerConcurrency({ systemBytes: 24 * GB, heapLimitBytes: 4 * GB }));
  });
});
