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

  it("finishes the turn of a worker killed with SIGKILL mid-turn on another worker, replying exactly once", async () => {
    const { adapter, startWorker, llm } = await setup();
    const first = startWorker();
    await first.waitForStderr(/longhaul-ready/);
    const gate = llm.hold();
    const message = inbound({ text: "survive this" });
    await adapter.submit(message);
    await llm.waitForRequests(1);
    expect(await first.kill("SIGKILL")).toBeNull();
    gate.release();

    const second = startWorker();
    await adapter.waitFor((sent) => sent.length >= 1, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(adapter.sent).toHaveLength(1);
    expect(adapter.sent[0]?.reply.text).toBe("echo: survive this");
    expect(second.stderr()).toContain("turn-committed");
    const transcript = await transcriptOf(message.sessionKey);
    expect(transcript.filter((entry) => entry.role === "user").map((entry) => withoutStamp(entry.content ?? ""))).toEqual(["survive this"]);
    expect(transcript.filter((entry) => entry.role === "assistant")).toHaveLength(1);
  });

  it("on SIGTERM hands a hanging turn back; another worker answers it once", async () => {
    const { adapter, startWorker, llm } = await setup({ SHUTDOWN_TIMEOUT_MS: "8000" });
    const first = startWorker();
    await first.waitForStderr(/longhaul-ready/);
    const gate = llm.hold();
    const message = inbound({ text: "finish me" });
    await adapter.submit(message);
    await llm.waitForRequests(1);
    const second = startWorker();
    await second.waitForStderr(/longhaul-ready/);
    expect(await first.kill("SIGTERM")).toBe(0);
    expect(first.stderr()).toContain("handing-back-running-turns");
    gate.release();

    await adapter.waitFor((sent) => sent.length >= 1, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(adapter.sent).toHaveLength(1);
    expect(adapter.sent[0]?.reply.text).toBe("echo: finish me");
    const transcript = await transcriptOf(message.sessionKey);
    expect(transcript.filter((entry) => entry.role === "user")).toHaveLength(1);
  });

  it("on SIGTERM lets a turn that finishes in time complete in the same worker", async () => {
    const { adapter, startWorker, llm } = await setup({ SHUTDOWN_TIMEOUT_MS: "8000" });
    llm.setHandler(() => ({ text: "done in time", delayMs: 800 }));
    const worker = startWorker();
    await worker.waitForStderr(/longhaul-ready/);
    await adapter.submit(inbound({ text: "quick one" }));
    await llm.waitForRequests(1);
    expect(await worker.kill("SIGTERM")).toBe(0);
    expect(worker.stderr()).toContain("turn-committed");
    expect(worker.stderr()).not.toContain("handing-back-running-turns");
    await adapter.waitFor((sent) => sent.length === 1);
    expect(adapter.sent[0]?.reply.text).toBe("done in time");
  });
});
