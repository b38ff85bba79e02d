import { describe, expect, it } from "vitest";
import { RecentWaits } from "../../../src/core/queue-wait.js";
import { queueLine } from "../../../src/agent/commands/run-command.js";

describe("RecentWaits: this worker's queue waits for /status", () => {
  it("gives the median and 99th percentile of the waits within the window, and forgets older ones", () => {
    const waits = new RecentWaits({ windowMs: 60_000, capacity: 1_000 });
    expect(waits.summary(0)).toBeUndefined();
    for (let index = 1; index <= 100; index++) waits.observe(index * 10, 1_000);
    expect(waits.summary(1_000)).toEqual({ messages: 100, p50Ms: 500, p99Ms: 990, windowMs: 60_000 });
    waits.observe(5_000, 30_000);
    // Just past 61,000 ms the first hundred are older than the window; the last one remains.
    expect(waits.summary(61_001)).toEqual({ messages: 1, p50Ms: 5_000, p99Ms: 5_000, windowMs: 60_000 });
    expect(waits.summary(90_001)).toBeUndefined();
  });

  it("keeps at most `capacity` waits, the newest", () => {
    const waits = new RecentWaits({ windowMs: 60_000, capacity: 3 });
    for (const wait of [9_000, 9_000, 1, 2, 3]) waits.observe(wait, 0);
    expect(waits.summary(0)).toEqual({ messages: 3, p50Ms: 2, p99Ms: 3, windowMs: 60_000 });
  });

  it("/status's queue line: backlog, running turns, and the recent waits when there are any", () => {
    expect(queueLine({ waiting: 3, running: 40 })).toBe("Queue: 3 waiting, 40 running");
    expect(queueLine({ waiting: 0, running: 1, recent: { messages: 812, p50Ms: 240, p99Ms: 12_500, windowMs: 300_000 } }))
      .toBe("Queue: 0 waiting, 1 running · wait p50 0.2 s, p99 13 s (last 5 min, 812 messages, this worker)");
  });
});
