/**
 * Helpers of the idle-compaction tests: a gate the fake summarizer's answers wait behind, and a
 * chat that talks a session past the idle mark (until a commit scheduled its idle job).
 */
import { Queue, type Job } from "bullmq";
import type { FakeLlm } from "../fakes/fake-llm.js";
import { isFlushRequest, isSummarizerRequest } from "./agent-fixtures.js";
import { inbound, type RecordingAdapter } from "./recording-adapter.js";
import { TURN_QUEUE, type IdleQueue } from "../../src/queue/index.js";
import type { InboundMessage } from "../../src/core/channel.js";

export const IDLE_SUMMARY = "## Goal\nA long talk about the gym (idle summary).";
export const LONG_TEXT = "a long story about the gym, the pool and the sauna ".repeat(40);

/** A gate the summarizer's answers wait behind while it is closed. */
export function summarizerGate() {
  let open: (() => void) | undefined;
  let closed: Promise<void> | undefined;
  return {
    close() {
      closed = new Promise((resolve) => (open = resolve));
    },
    open() {
      open?.();
      closed = undefined;
    },
    wait: () => closed ?? Promise.resolve(),
  };
}
export type SummarizerGate = ReturnType<typeof summarizerGate>;

/** The fake LLM of these tests: the summarizer answers IDLE_SUMMARY once the gate is open; flushes save nothing; turns get "ok". */
export function idleModel(llm: FakeLlm, gate: SummarizerGate): void {
  llm.route(isSummarizerRequest, async () => {
    await gate.wait();
    return { text: IDLE_SUMMARY };
  });
  llm.setHandler((request) => (isFlushRequest(request) ? { text: "NO_REPLY" } : { text: "ok" }));
}

export const summarizerCalls = (llm: FakeLlm) => llm.requests.filter(isSummarizerRequest).length;

export async function waitUntil(probe: () => Promise<boolean> | boolean, timeoutMs = 30_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Resolves once no turn job of the session waits or runs. A reply reaches the adapter before the
 * turn job that sent it ends: the job schedules the idle compaction after its commit (the
 * worker's afterCommit, after the delivery job went out), so only then does idleJobOf answer for
 * that commit.
 */
export async function turnsSettled(idle: IdleQueue, sessionKey: string, timeoutMs = 60_000): Promise<void> {
  const { connection, prefix } = idle.queue.opts;
  const turns = new Queue(TURN_QUEUE, { connection, ...(prefix === undefined ? {} : { prefix }) });
  turns.on("error", () => undefined);
  try {
    await waitUntil(async () => {
      const jobs = await turns.getJobs(["active", "wait", "prioritized", "delayed"]);
      return !jobs.some((job) => job.data.sessionKey === sessionKey && job.data.approvalId === undefined);
    }, timeoutMs, `the turn jobs of ${sessionKey} to end`);
  } finally {
    await turns.close();
  }
}

/** The idle job waiting or running for a session, if any (deduplicated: at most one). */
export async function idleJobOf(idle: IdleQueue, sessionKey: string): Promise<Job | undefined> {
  const jobs = await idle.queue.getJobs(["delayed", "wait", "active"]);
  return jobs.find((job) => job.data.sessionKey === sessionKey);
}

export const privateChat = (name: string) => ({ chatId: `dm-${name}`, sessionKey: `console:dm-${name}`, chatType: "private" as const, userId: name, userName: name });

export function idleChat(adapter: RecordingAdapter, idle: IdleQueue, where: Partial<InboundMessage> & { chatId: string; sessionKey: string }) {
  let count = 0;
  const say = async (text: string, timeoutMs?: number) => {
    const before = adapter.sent.length;
    await adapter.submit(inbound({ ...where, text, messageId: `${where.chatId}-${++count}` }));
    await adapter.waitFor((sent) => sent.length > before, timeoutMs);
    return adapter.sent[before]!.reply.text;
  };
  /**
   * Talks until a commit scheduled an idle compaction (the session passed the mark). → the turns it took.
   * Each reply's turn job must end before the look: a look that came before the schedule would go
   * on talking, and a session talked past the in-loop threshold compacts within the turn (behind
   * a closed summarizerGate, that turn is never answered).
   */
  const talkPastMark = async () => {
    for (let turn = 1; turn <= 12; turn++) {
      await say(`topic ${turn}: ${LONG_TEXT}`, 60_000);
      await turnsSettled(idle, where.sessionKey);
      if (await idleJobOf(idle, where.sessionKey)) return turn;
    }
    throw new Error("the session never passed the idle mark");
  };
  return { say, talkPastMark };
}
