import { afterEach, describe, expect, it } from "vitest";
import { withoutStamp } from "../../fakes/fake-llm.js";
import { isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { startWorkerFleet, type WorkerFleet } from "../../helpers/worker-fleet.js";

describe("a worker killed during a compaction", () => {
  let fleet: WorkerFleet | undefined;

  afterEach(async () => {
    await fleet?.close();
  });

  // Two worker processes start one after the other, and the second must find the stalled job
  // (JOB_LOCK_MS after the kill): on a loaded 2-core box each process start alone can take
  // 20 s and more, so every wait below is for a condition, with a generous limit.
  it("leaves a consistent session, and the turn completes once on another worker", { timeout: 300_000 }, async () => {
    fleet = await startWorkerFleet({ JOB_LOCK_MS: "1500", MEMORY_FLUSH_MAX_TOKENS: "0" });
    const { llm, adapter, startWorker } = fleet;
    llm.route(isSummarizerRequest, { text: "## Goal\nPlan the trip." });
    const first = startWorker();
    await first.waitForStderr(/longhaul-ready/, 90_000);

    for (let turn = 1; turn <= 6; turn++) {
      await adapter.submit(inbound({ text: `day ${turn} of the trip: ${"museums and food ".repeat(50)}`, messageId: `d${turn}` }));
      await adapter.waitFor((sent) => sent.length === turn, 60_000);
    }
    const before = llm.requests.length;
    const gate = llm.hold();
    await adapter.submit(inbound({ text: "/compress", messageId: "compress" }));
    const [held] = (await llm.waitForRequests(before + 1, 60_000)).slice(before);
    expect(isSummarizerRequest(held!)).toBe(true);
    expect(await first.kill("SIGKILL")).toBeNull();

    await fleet.withStore(async (store) => {
      const sessionKey = "console:chat-1";
      const stateAtCrash = await store.load(sessionKey);
      const transcriptAtCrash = await store.readTranscript(sessionKey);
      gate.release();
      const second = startWorker();

      await second.waitForStderr(/longhaul-ready/, 90_000);
      await adapter.waitFor((sent) => sent.length === 7, 90_000);
      // The second worker committed the turn (its log line may trail the reply on a loaded box).
      await second.waitForStderr(/turn-committed/, 30_000);
      // No second answer follows: give a duplicate the time it would need to show.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(adapter.sent).toHaveLength(7);
      expect(adapter.sent[6]?.reply.text).toMatch(/^Compacted: /);

      // The crash left the old state whole: no half-compacted context was written.
      expect(stateAtCrash.version).toBe(6);
      expect(stateAtCrash.live.some((message) => message.kind === "summary")).toBe(false);
      // The retried turn committed once, on top of it, and kept every original.
      const after = await store.load(sessionKey);
      expect(after.version).toBe(7);
      expect(after.stats.compactions).toBe(1);
      expect(after.live.filter((message) => message.kind === "summary")).toHaveLength(1);
      const transcript = await store.readTranscript(sessionKey);
      expect(transcript.slice(0, transcriptAtCrash.length)).toEqual(transcriptAtCrash);
      const users = transcript.filter((message) => message.role === "user" && message.kind !== "summary");
      expect(users.map((message) => withoutStamp(message.content ?? "").slice(0, 8))).toEqual([1, 2, 3, 4, 5, 6].map((turn) => `day ${turn} of`));
    });
  });
});
