import { afterEach, describe, expect, it } from "vitest";
import { withoutStamp } from "../fakes/fake-llm.js";
import { inbound } from "../helpers/recording-adapter.js";
import { startWorkerFleet, type WorkerFleet } from "../helpers/worker-fleet.js";

describe("worker crash and shutdown", () => {
  let fleet: WorkerFleet | undefined;

  afterEach(async () => {
    await fleet?.close();
    fleet = undefined;
  });

  async function setup(overrides: Record<string, string> = {}) {
    fleet = await startWorkerFleet({ JOB_LOCK_MS: "1500", ...overrides });
    return fleet;
  }

  const transcriptOf = (sessionKey: string) => fleet!.withStore((store) => store.readTranscript(sessionKey));

  // Worker processes start one after the other and a second one must find a stalled job: on a
  // loaded 2-core box a process start alone can take 20 s and more, so each wait is for a
  // condition with a generous limit, and each test has 180 s.
  const START_MS = 90_000;

  it("finishes the turn of a worker killed with SIGKILL mid-turn on another worker, replying exactly once", { timeout: 180_000 }, async () => {
    const { adapter, startWorker, llm } = await setup();
    const first = startWorker();
    await first.waitForStderr(/longhaul-ready/, START_MS);
    const gate = llm.hold();
    const message = inbound({ text: "survive this" });
    await adapter.submit(message);
    await llm.waitForRequests(1, 60_000);
    expect(await first.kill("SIGKILL")).toBeNull();
    gate.release();

    const second = startWorker();
    await second.waitForStderr(/longhaul-ready/, START_MS);
    await adapter.waitFor((sent) => sent.length >= 1, 60_000);
    // The second worker committed it (its log line may trail the reply on a loaded box).
    await second.waitForStderr(/turn-committed/, 30_000);
    // No second answer follows: give a duplicate the time it would need to show.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(adapter.sent).toHaveLength(1);
    expect(adapter.sent[0]?.reply.text).toBe("echo: survive this");
    const transcript = await transcriptOf(message.sessionKey);
    expect(transcript.filter((entry) => entry.role === "user").map((entry) => withoutStamp(entry.content ?? ""))).toEqual(["survive this"]);
    expect(transcript.filter((entry) => entry.role === "assistant")).toHaveLength(1);
  });

  it("on SIGTERM hands a hanging turn back; another worker answers it once", { timeout: 180_000 }, async () => {
    // The held call must still hang when SIGTERM comes, after the second worker's start (up to
    // 20 s on a loaded box): testEnv's 5 s LLM timeout would fail the turn first (CI at load 20).
    const { adapter, startWorker, llm } = await setup({ SHUTDOWN_TIMEOUT_MS: "8000", LLM_TIMEOUT_MS: "150000" });
    const first = startWorker();
    await first.waitForStderr(/longhaul-ready/, START_MS);
    const gate = llm.hold();
    const message = inbound({ text: "finish me" });
    await adapter.submit(message);
    await llm.waitForRequests(1, 60_000);
    const second = startWorker();
    await second.waitForStderr(/longhaul-ready/, START_MS);
    expect(await first.kill("SIGTERM")).toBe(0);
    expect(first.stderr()).toContain("handing-back-running-turns");
    gate.release();

    await adapter.waitFor((sent) => sent.length >= 1, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(adapter.sent).toHaveLength(1);
    expect(adapter.sent[0]?.reply.text).toBe("echo: finish me");
    const transcript = await transcriptOf(message.sessionKey);
    expect(transcript.filter((entry) => entry.role === "user")).toHaveLength(1);
  });

  it("on SIGTERM lets a turn that finishes in time complete in the same worker", { timeout: 180_000 }, async () => {
    const { adapter, startWorker, llm } = await setup({ SHUTDOWN_TIMEOUT_MS: "8000" });
    llm.setHandler(() => ({ text: "done in time", delayMs: 800 }));
    const worker = startWorker();
    await worker.waitForStderr(/longhaul-ready/, START_MS);
    await adapter.submit(inbound({ text: "quick one" }));
    await llm.waitForRequests(1, 60_000);
    expect(await worker.kill("SIGTERM")).toBe(0);
    expect(worker.stderr()).toContain("turn-committed");
    expect(worker.stderr()).not.toContain("handing-back-running-turns");
    await adapter.waitFor((sent) => sent.length === 1, 60_000);
    expect(adapter.sent[0]?.reply.text).toBe("done in time");
  });
});
