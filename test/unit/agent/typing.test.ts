import { describe, expect, it } from "vitest";
import { TurnTyping } from "../../../src/agent/typing.js";
import type { TurnActivity } from "../../../src/core/channel.js";

/** The turn-path edges of the typing delay; the pipeline tests are in test/integration/typing-delay.test.ts. */
describe("TurnTyping", () => {
  const target = { platform: "console", chatId: "chat-1" } as const;
  const recorder = () => {
    const published: Array<TurnActivity["type"]> = [];
    return { published, publish: async (activity: TurnActivity) => void published.push(activity.type) };
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const activeTimers = () => process.getActiveResourcesInfo().filter((name) => name === "Timeout").length;

  it("publishes nothing when the turn ends in the tick its delay ran out", async () => {
    const { published, publish } = recorder();
    const typing = new TurnTyping({ sessionKey: "s", target, publish, delayMs: 5 });
    // The delay is over, but the timer's callback cannot run before this synchronous code ends.
    const due = Date.now() + 20;
    while (Date.now() < due) { /* hold the event loop */ }
    typing.finish();
    await sleep(30);
    expect(published).toEqual([]);
  });

  it("after the delay: started, then finished once however often the turn ends", async () => {
    const { published, publish } = recorder();
    const typing = new TurnTyping({ sessionKey: "s", target, publish, delayMs: 5 });
    await sleep(30);
    expect(published).toEqual(["turn-started"]);
    typing.finish();
    typing.finish();
    await sleep(10);
    expect(published).toEqual(["turn-started", "turn-finished"]);
  });

  it("a delay of 0 starts at once, before anything else of the turn", () => {
    const { published, publish } = recorder();
    const typing = new TurnTyping({ sessionKey: "s", target, publish, delayMs: 0 });
    expect(published).toEqual(["turn-started"]);
    typing.finish();
    expect(published).toEqual(["turn-started", "turn-finished"]);
  });

  it("its timer keeps no process alive", () => {
    const before = activeTimers();
    const typing = new TurnTyping({ sessionKey: "s", target, publish: recorder().publish, delayMs: 60_000 });
    expect(activeTimers()).toBe(before);
    typing.finish();
  });

  it("once the commit goes out, a start still waiting never comes; one already out still gets its finished", async () => {
    const quick = recorder();
    const waiting = new TurnTyping({ sessionKey: "s", target, publish: quick.publish, delayMs: 5 });
    waiting.committing();
    await sleep(30);
    waiting.finish();
    expect(quick.published).toEqual([]);
    const slow = recorder();
    const started = new TurnTyping({ sessionKey: "s", target, publish: slow.publish, delayMs: 0 });
    started.committing();
    started.finish();
    expect(slow.published).toEqual(["turn-started", "turn-finished"]);
  });

  it("a turn's started and finished carry its id, another turn (a retry of it too) another one", () => {
    const ids: Array<string | undefined> = [];
    const publish = async (activity: TurnActivity) => void ids.push(activity.turnId);
    const first = new TurnTyping({ sessionKey: "s", target, publish, delayMs: 0 });
    first.finish();
    const retry = new TurnTyping({ sessionKey: "s", target, publish, delayMs: 0 });
    retry.finish();
    expect(ids).toHaveLength(4);
    expect(ids[0]).toMatch(/\S/);
    expect(ids[1]).toBe(ids[0]);
    expect(ids[2]).not.toBe(ids[0]);
    expect(ids[3]).toBe(ids[2]);
  });
});
