import { afterEach, describe, expect, it } from "vitest";
import { lastUserText, textOf, withoutStamp } from "../fakes/fake-llm.js";
import type { AppProcess } from "../helpers/app-process.js";
import { inbound } from "../helpers/recording-adapter.js";
import { startWorkerFleet, type WorkerFleet } from "../helpers/worker-fleet.js";

describe("busy modes and /stop (gateway here, worker in another process)", () => {
  let fleet: WorkerFleet | undefined;
  let worker: AppProcess | undefined;

  afterEach(async () => {
    await fleet?.close();
    fleet = undefined;
  });

  async function setup(busyMode: string) {
    fleet = await startWorkerFleet({ BUSY_MODE: busyMode });
    worker = fleet.startWorker();
    await worker.waitForStderr(/longhaul-ready/);
    return fleet;
  }

  it("collect: messages sent during a turn are answered together in the next turn", async () => {
    const { adapter, llm } = await setup("collect");
    const gate = llm.hold();
    await adapter.submit(inbound({ text: "first", messageId: "c1" }));
    await llm.waitForRequests(1);
    await adapter.submit(inbound({ text: "second", messageId: "c2" }));
    await adapter.submit(inbound({ text: "third", messageId: "c3" }));
    gate.release();
    await adapter.waitFor((sent) => sent.length === 2);
    expect(adapter.sent.map((entry) => entry.reply.inReplyTo)).toEqual([["c1"], ["c2", "c3"]]);
    expect(adapter.sent[1]?.reply.text).toBe("echo: third");
    expect(llm.requests).toHaveLength(2);
  });

  it("queue: one turn per message, in order", async () => {
    const { adapter, llm } = await setup("queue");
    const gate = llm.hold();
    await adapter.submit(inbound({ text: "q1", messageId: "q1" }));
    await llm.waitForRequests(1);
    await adapter.submit(inbound({ text: "q2", messageId: "q2" }));
    await adapter.submit(inbound({ text: "q3", messageId: "q3" }));
    gate.release();
    await adapter.waitFor((sent) => sent.length === 3);
    expect(adapter.sent.map((entry) => entry.reply.text)).toEqual(["echo: q1", "echo: q2", "echo: q3"]);
    expect(adapter.sent.map((entry) => entry.reply.inReplyTo)).toEqual([["q1"], ["q2"], ["q3"]]);
  });

  it("interrupt: a new message stops the running turn, and one answer covers everything", async () => {
    const { adapter, llm } = await setup("interrupt");
    const gate = llm.hold();
    await adapter.submit(inbound({ text: "write me a long essay", messageId: "i1" }));
    await llm.waitForRequests(1);
    await adapter.submit(inbound({ text: "actually, just a haiku", messageId: "i2" }));
    await llm.waitForRequests(2);
    gate.release();
    await adapter.waitFor((sent) => sent.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(adapter.sent).toHaveLength(1);
    expect(adapter.sent[0]?.reply.inReplyTo).toEqual(["i1", "i2"]);
    expect(adapter.sent[0]?.reply.text).toBe("echo: actually, just a haiku");
    const restarted = llm.requests[1]!.body.messages.filter((message) => message.role === "user").map((message) => withoutStamp(textOf(message.content)));
    expect(restarted).toEqual(["write me a long essay", "actually, just a haiku"]);
    expect(worker!.stderr()).toContain("turn-interrupted");
  });

  it("/stop aborts the running turn: the user gets 'Stopped.' and no answer", async () => {
    const { adapter, llm } = await setup("collect");
    llm.hold();
    await adapter.submit(inbound({ text: "count to a million", messageId: "s1" }));
    await llm.waitForRequests(1);
    await adapter.submit(inbound({ text: "/stop", messageId: "s2" }));
    await adapter.waitFor((sent) => sent.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(adapter.sent.map((entry) => entry.reply.text)).toEqual(["Stopped."]);
    expect(llm.requests).toHaveLength(1);
    expect(lastUserText(llm.requests[0]!)).toBe("count to a million");
  });
});
