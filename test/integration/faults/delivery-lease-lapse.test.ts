/**
 * A gateway frozen past its delivery job's lock and lease while a part is in flight (the process
 * stopped, or starved of CPU with its event loop seconds behind) must not start a second
 * delivery of the same session when it wakes. BullMQ declares the job stalled and runs it again
 * in the same process while the first run still waits for its send; before, that second run
 * took the lapsed lease and sent the in-flight part again. The test holds part 1's send, blocks
 * the event loop past the lock, and keeps the lease away from the first run's heartbeat (as a
 * lapse that the second run's BEGIN reaches first would).
 */
import { describe, expect, it } from "vitest";
import { createRedis } from "../../../src/queue/index.js";
import { sessionKeys } from "../../../src/session/keys.js";
import { lastUserText, startFakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline } from "../../helpers/pipeline.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { PartsPlatform } from "../../helpers/parts-platform.js";
import { sleep } from "../../helpers/stall-run.js";
import { closeAfterTest } from "../../helpers/close-after-test.js";

const LOCK_MS = 1_000;

describe("a gateway frozen past its delivery lock and lease while a part is in flight", () => {
  it("sends that part once: BullMQ's re-run of the stalled job waits for the first run", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    llm.setHandler((request) => {
      const ask = lastUserText(request);
      return { text: ask === "long" ? ["long:part0", "long:part1", "long:part2"].join("\n\n") : `${ask}:part0` };
    });
    const config = testConfig({ LLM_BASE_URL: llm.url, JOB_LOCK_MS: String(LOCK_MS) });
    // The first part of "long" waits for `release` before its send returns.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const platform = new PartsPlatform([], {
      afterPart: async (part) => {
        if (part === "long:part0") await released;
      },
    });
    const pipeline = closeAfterTest(await startPipeline(config, [platform]));
    const redis = createRedis(config.REDIS_URL!);
    const keys = sessionKeys(config.REDIS_PREFIX, inbound({ text: "" }).sessionKey);
    try {
      await platform.submit("long", "l1");
      while (!platform.accepted.includes("long:part0")) await sleep(20);
      // Part 1 is in flight. The lease is deleted each time the heartbeat renews it.
      let lapsing = true;
      const lapse = (async () => {
        while (lapsing) {
          await redis.del(keys.deliveryLease);
          await sleep(1);
        }
      })();
      // The whole process freezes past the job's lock: BullMQ re-runs the stalled job on waking.
      const frozenUntil = Date.now() + 2.5 * LOCK_MS;
      while (Date.now() < frozenUntil) {
        // Blocked on purpose.
      }
      // The re-run comes within a few stall checks (every LOCK_MS).
      const until = Date.now() + 5 * LOCK_MS;
      while (Date.now() < until && platform.accepted.filter((part) => part === "long:part0").length < 2) await sleep(50);
      lapsing = false;
      await lapse;
      release();
      await platform.submit("short", "s1");
      while (!platform.accepted.includes("short:part0")) await sleep(50);
      await sleep(1_000);
      expect(platform.accepted).toEqual(["long:part0", "long:part1", "long:part2", "short:part0"]);
    } finally {
      release();
      redis.disconnect();
    }
  }, 60_000);
});
