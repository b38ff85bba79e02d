/**
 * A turn's activities reaching the gateway out of order, as they can on a Redis Cluster (each
 * PUBLISH through any master, one to a dying master sent again later: src/gateway/activity-order.ts).
 * Played here on one Redis by publishing them in the late order: what the adapter is handed.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { TurnActivity } from "../../../src/core/channel.js";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { globalKeys } from "../../../src/session/keys.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, testRedisAddress, type Pipeline } from "../../helpers/pipeline.js";
import { RecordingAdapter } from "../../helpers/recording-adapter.js";

describe("turn activity heard out of order", () => {
  const adapter = new RecordingAdapter("console");
  let pipeline: Pipeline;
  let publisher: Redis;
  let channel: string;

  beforeAll(async () => {
    const config = testConfig({});
    pipeline = await startPipeline(config, [adapter], { worker: false });
    publisher = createRedis(testRedisAddress(config));
    channel = globalKeys(config.REDIS_PREFIX).activityChannel;
  });
  afterAll(async () => {
    publisher?.disconnect();
    await pipeline?.close();
  });

  let marks = 0;
  /** Publishes `activities` in this order on one connection, then waits until the gateway has handled them all (a last one, of another session). */
  // Each test's turns have ids of their own: the gateway remembers finished turns of every session.
  const hear = async (sessionKey: string, activities: Array<Pick<TurnActivity, "type"> & { turnId?: string }>) => {
    for (const activity of activities) await publisher.publish(channel, JSON.stringify({ ...activity, sessionKey, target: { platform: "console", chatId: sessionKey } }));
    const mark = `mark-${++marks}`;
    await publisher.publish(channel, JSON.stringify({ type: "turn-finished", sessionKey: mark, target: { platform: "console", chatId: mark } }));
    await vi.waitFor(() => expect(adapter.activity.some((activity) => activity.sessionKey === mark)).toBe(true), { timeout: 10_000, interval: 20 });
    return adapter.activity.filter((activity) => activity.sessionKey === sessionKey).map((activity) => `${activity.type}${activity.turnId ? ` ${activity.turnId}` : ""}`);
  };

  it("a turn's start heard after its finish is not handed on (it would start typing nothing stops)", async () => {
    expect(await hear("console:late-start", [{ type: "turn-finished", turnId: "a1" }, { type: "turn-started", turnId: "a1" }])).toEqual(["turn-finished a1"]);
  });

  it("a turn's finish heard after the next turn's start is not handed on (it would stop that turn's typing)", async () => {
    expect(await hear("console:late-finish", [
      { type: "turn-started", turnId: "b1" }, { type: "turn-started", turnId: "b2" }, { type: "turn-finished", turnId: "b1" }, { type: "turn-finished", turnId: "b2" },
    ])).toEqual(["turn-started b1", "turn-started b2", "turn-finished b2"]);
  });

  it("in order, each turn's start and finish are handed on; a turn retried (another id) starts again", async () => {
    expect(await hear("console:in-order", [
      { type: "turn-started", turnId: "c1" }, { type: "turn-finished", turnId: "c1" }, { type: "turn-started", turnId: "c2" }, { type: "turn-finished", turnId: "c2" },
    ])).toEqual(["turn-started c1", "turn-finished c1", "turn-started c2", "turn-finished c2"]);
  });

  it("activities without a turn's id (a worker from before 2026-12-07) are handed on as they come", async () => {
    expect(await hear("console:no-id", [{ type: "turn-finished" }, { type: "turn-started" }, { type: "turn-finished" }])).toEqual(["turn-finished", "turn-started", "turn-finished"]);
  });
});
