/**
 * A BullMQ job whose lock is gone when it ends — as after a Redis failover that lost the lock or
 * let it lapse — makes the worker emit `Missing lock for job … moveToFinished`. That is logged
 * as a warning (`job-lock-lost`: the job runs again, fenced), not as the worker's error; any
 * other worker error stays an error. Real BullMQ on a real redis-server.
 */
import { Queue, Worker } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedis, logWorkerError, type Redis } from "../../../src/queue/index.js";
import { captureLogs } from "../../helpers/pipeline.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";

describe("a BullMQ worker's errors in the logs", () => {
  let server: RedisServerHandle;
  let connection: Redis;

  beforeAll(async () => {
    server = await startRedisServer();
    connection = createRedis(server.url);
  }, 30_000);

  afterAll(async () => {
    connection?.disconnect();
    await server?.dispose();
  });

  it("a job whose lock was lost before it finished: one warning, job-lock-lost, and no error", async () => {
    const logs = captureLogs("info");
    const prefix = `wl${Date.now().toString(36)}`;
    const queue = new Queue("lost", { connection, prefix });
    const erred = new Promise<Error>((resolve) => {
      const worker = new Worker("lost", async (job) => {
        // What a failover does to the lock while the job runs.
        await connection.del(`${prefix}:lost:${job.id}:lock`);
        return "done";
      }, { connection, prefix });
      worker.on("error", (error) => {
        logWorkerError(logs.logger, "worker-error", error);
        resolve(error);
        void worker.close();
      });
    });
    await queue.add("job", {});
    expect((await erred).message).toMatch(/^Missing lock for job /);
    const lines = logs.lines.map((line) => JSON.parse(line) as { level: number; msg: string; worker?: string });
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    expect(lines.filter((line) => line.msg === "job-lock-lost")).toEqual([expect.objectContaining({ level: 40, worker: "worker-error" })]);
    await queue.close();
  }, 30_000);

  it("any other worker error stays an error under its own name", () => {
    const logs = captureLogs("info");
    logWorkerError(logs.logger, "delivery-worker-error", new Error("ERR unknown command 'bzpopmin'"));
    expect(logs.lines.map((line) => JSON.parse(line) as { level: number; msg: string })).toEqual([expect.objectContaining({ level: 50, msg: "delivery-worker-error" })]);
  });
});
