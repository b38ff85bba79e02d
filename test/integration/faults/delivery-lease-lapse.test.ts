/**
 * A gateway frozen past its delivery job's lock and lease while a part is in flight (the process
 * stopped, or starved of CPU with its event loop seconds behind) must not start a second
 * delivery of the same session when it wakes. BullMQ declares the job stalled and runs it again
 * in the same process while the first run still waits for its send; before, that second run
 * took the lapsed lease and sent the in-flight part again. The test holds part 1's send, blocks
 * the event loop past the lock, and keeps the lease away from the first run's heartbeat (as a
 * lapse that the second run's BEGIN reaches first would).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ChannelAdapter, IngressPort, OutboundReply, SendOptions } from "../../../src/adapters/channel-adapter.js";
import { createRedis } from "../../../src/queue/index.js";
import { sessionKeys } from "../../../src/session/keys.js";
import { lastUserText, startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { sleep } from "../../helpers/stall-run.js";

const LOCK_MS = 1_000;

/** A platform that records every part it accepted; the first part of "long" waits for `release` before its send returns. */
class HeldPlatform implements ChannelAdapter {
  readonly platform = "console" as const;
  readonly accepted: string[] = [];
  #ingress?: IngressPort;
  #release!: () => void;
  readonly released = new Promise<void>((resolve) => (this.#release = resolve));
  async start(ingress: IngressPort): Promise<void> {
    this.#ingress = ingress;
  }
  submit(text: string, messageId: string) {
    return this.#ingress!.submit(inbound({ text, messageId }));
  }
  release() {
    this.#release();
  }
  async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    const parts = reply.text.split("\n\n");
    for (let index = options.fromPart; index < parts.length; index++) {
      this.accepted.push(parts[index]!);
      if (parts[index] === "long:part0") await this.released;
      await options.onPartSent(index, { last: index === parts.length - 1 });
    }
  }
  async stop(): Promise<void> {}
  isConnected(): boolean {
    return true;
  }
}

let llm: FakeLlm | undefined;
let pipeline: Pipeline | undefined;
afterEach(async () => {
  await pipeline?.close();
  await llm?.close();
  pipeline = llm = undefined;
});

describe("a gateway frozen past its delivery lock and lease while a part is in flight", () => {
  it("sends that part once: BullMQ's re-run of the stalled job waits for the first run", async () => {
    llm = await startFakeLlm();
    llm.setHandler((request) => {
      const ask = lastUserText(request);
      return { text: ask === "long" ? ["long:part0", "long:part1", "long:part2"].join("\n\n") : `${ask}:part0` };
    });
    const config = testConfig({ LLM_BASE_URL: llm.url, JOB_LOCK_MS: String(LOCK_MS) });
    const platform = new HeldPlatform();
    pipeline = await startPipeline(config, [platform]);
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
      platform.release();
      await platform.submit("short", "s1");
      while (!platform.accepted.includes("short:part0")) await sleep(50);
      await sleep(1_000);
      expect(platform.accepted).toEqual(["long:part0", "long:part1", "long:part2", "short:part0"]);
    } finally {
      platform.release();
      redis.disconnect();
    }
  }, 60_000);
});
