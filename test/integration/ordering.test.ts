import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastUserText, startFakeLlm, textOf, withoutStamp, type FakeLlm, type RecordedRequest } from "../fakes/fake-llm.js";
import { spawnApp, type AppProcess } from "../helpers/app-process.js";
import { testConfig, testEnv } from "../helpers/config.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../helpers/recording-adapter.js";

const SESSIONS = 50;
const MESSAGES = 20;
const sessionOf = (text: string) => /^(s\d+)-/.exec(text)?.[1] ?? "?";

describe("per-session order with two worker processes", () => {
  let llm: FakeLlm;
  let workers: AppProcess[] = [];
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  const inFlight = new Map<string, number>();
  let maxInFlight = 0;

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.setHandler(async (request) => {
      const session = sessionOf(lastUserText(request));
      const now = (inFlight.get(session) ?? 0) + 1;
      inFlight.set(session, now);
      maxInFlight = Math.max(maxInFlight, now);
      await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 15));
      inFlight.set(session, (inFlight.get(session) ?? 1) - 1);
      return { text: `ok ${lastUserText(request)}` };
    });
    const env = testEnv({ LLM_BASE_URL: llm.url, WORKER_CONCURRENCY: "8" });
    workers = [1, 2].map(() => spawnApp({ ...env, LONGHAUL_ROLE: "worker", LOG_LEVEL: "info" }));
    pipeline = await startPipeline(testConfig({ ...env, LONGHAUL_ROLE: "gateway" }), [adapter], { worker: false });
    // Both workers must be taking jobs before the messages arrive, or on a loaded machine the
    // first one ready answers everything and "both took turns" says nothing about the code.
    await Promise.all(workers.map((worker) => worker.waitForStderr(/longhaul-ready/, 60_000)));
  });

  afterAll(async () => {
    await pipeline?.close();
    await Promise.all(workers.map((worker) => worker.kill("SIGTERM")));
    await llm?.close();
  });

  it("answers 50 sessions × 20 interleaved messages in order, one turn at a time, never twice", async () => {
    const submitted: string[] = [];
    for (let m = 0; m < MESSAGES; m++) {
      await Promise.all(Array.from({ length: SESSIONS }, async (_, s) => {
        const message = inbound({ chatId: `s${s}`, messageId: `s${s}-m${m}`, text: `s${s}-m${m}` });
        expect((await adapter.submit(message)).status).toBe("accepted");
        submitted.push(message.messageId);
      }));
    }
    await adapter.waitFor(() => new Set(adapter.answeredIds()).size === SESSIONS * MESSAGES, 120_000);

    // Both worker processes took turns.
    for (const worker of workers) expect(worker.stderr()).toContain("turn-committed");
    // Never two turns of one session at once.
    expect(maxInFlight).toBe(1);

    // No reply sent twice, and every message answered exactly once.
    const replyIds = adapter.sent.map((entry) => entry.reply.replyId);
    expect(new Set(replyIds).size).toBe(replyIds.length);
    expect(adapter.answeredIds().sort()).toEqual([...submitted].sort());

    // Per session, the model saw the messages in order, each once, and every request built on
    // the previous one's answer (no turn ran on a stale copy of the session).
    const bySession = new Map<string, RecordedRequest[]>();
    for (const request of llm.requests) {
      const session = sessionOf(lastUserText(request));
      bySession.set(session, [...(bySession.get(session) ?? []), request]);
    }
    expect(bySession.size).toBe(SESSIONS);
    for (const [session, requests] of bySession) {
      const last = requests[requests.length - 1]!;
      const userTexts = last.body.messages.filter((message) => message.role === "user").map((message) => withoutStamp(textOf(message.content)));
      expect(userTexts).toEqual(Array.from({ length: MESSAGES }, (_, m) => `${session}-m${m}`));
      for (let index = 1; index < requests.length; index++) {
        const previous = requests[index - 1]!.body.messages.map((message) => textOf(message.content));
        const current = requests[index]!.body.messages.map((message) => textOf(message.content));
        expect(current.slice(0, previous.length)).toEqual(previous);
        expect(current[previous.length]).toBe(`ok ${lastUserText(requests[index - 1]!)}`);
      }
    }
  });
});
