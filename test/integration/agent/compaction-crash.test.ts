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

  it("leaves a consistent session, and the turn completes once on another worker", async () => {
    fleet = await startWorkerFleet({ JOB_LOCK_MS: "1500", MEMORY_FLUSH_MAX_TOKENS: "0" });
    const { llm, adapter, startWorker } = fleet;
    llm.route(isSummarizerRequest, { text: "## Goal\nPlan the trip." });
    const first = startWorker();
    await first.waitForStderr(/longhaul-ready/);

    for (let turn = 1; turn <= 6; turn++) {
      await adapter.submit(inbound({ text: `day ${turn} of the trip: ${"museums and food ".repeat(50)}`, messageId: `d${turn}` }));
      await adapter.waitFor((sent) => sent.length === turn);
    }
    const before = llm.requests.length;
    const gate = llm.hold();
    await adapter.submit(inbound({ text: "/compress", messageId: "compress" }));
    const [held] = (await llm.waitForRequests(before + 1)).slice(before);
    expect(isSummarizerRequest(held!)).toBe(true);
    expect(await first.kill("SIGKILL")).toBeNull();

    await fleet.withStore(async (store) => {
      const sessionKey = "console:chat-1";
      const stateAtCrash = await store.load(sessionKey);
      const transcriptAtCrash = await store.readTranscript(sessionKey);
      gate.release();
      const second = startWorker();

      await adapter.waitFor((sent) => sent.length === 7, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(adapter.sent).toHaveLength(7);
      expect(adapter.sent[6]?.reply.text).toMatch(/^Compacted: /);
      expect(second.stderr()).toContain("turn-committed");

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
