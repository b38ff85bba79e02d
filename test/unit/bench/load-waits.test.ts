/**
 * The load bench's split of the wait above the model (bench/load.ts, splitWaits): the time a
 * follow-up spent behind its own chat's earlier answer is the chat's, the rest longhaul's; and
 * `--patient` users, who never write before their last answer came.
 */
import { describe, expect, it } from "vitest";
import { messageOf, parsePlan, random, splitWaits } from "../../../bench/load.js";
import { simulate } from "../../../bench/load-followups.js";

describe("the load bench's wait split", () => {
  it("counts a message to an idle chat whole as its own wait, and a follow-up's from its chat's earlier answer on", () => {
    const sent = new Map([
      // User 1: idle chat, answered 4,300 ms after, model 4,000: 300 own.
      [0, { at: 0, modelMs: 4_000, user: 1 }],
      // User 2 writes twice: the second (at 1,000) waits until the first is answered (4,200),
      // then is answered at 8,400 with a 4,000 model: 3,200 behind its chat, 200 own.
      [1, { at: 0, modelMs: 4_000, user: 2 }],
      [2, { at: 1_000, modelMs: 4_000, user: 2 }],
      // User 3 writes twice before the first is answered: both in one answer (batched).
      [3, { at: 0, modelMs: 4_000, user: 3 }],
      [4, { at: 100, modelMs: 4_000, user: 3 }],
    ]);
    const answered = new Map([[0, 4_300], [1, 4_200], [2, 8_400], [3, 4_500], [4, 4_500]]);
    const split = splitWaits(sent, answered);
    const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
    expect(sorted(split.all)).toEqual([200, 300, 400, 500, 3_400]);
    expect(sorted(split.idleChat)).toEqual([200, 300, 500]);
    expect(sorted(split.behindChat)).toEqual([3_200, 4_400]);
    expect(sorted(split.own)).toEqual([200, 200, 300, 500]);
    expect(split.batched).toBe(1);
  });

  it("leaves an unanswered message out, and its chat busy for what follows", () => {
    const sent = new Map([[0, { at: 0, modelMs: 4_000, user: 1 }], [1, { at: 10_000, modelMs: 4_000, user: 1 }]]);
    const split = splitWaits(sent, new Map([[1, 15_000]]));
    expect(split.all).toEqual([1_000]);
    expect(split.idleChat).toEqual([]);
    expect(split.own).toEqual([]);
  });

  it("with patient users, never gives a message to a user whose last one is unanswered", () => {
    const plan = parsePlan(["--users=20", "--long-share=0.5"]);
    const draw = random(7);
    const busy = new Set<number>();
    for (let index = 0; index < 200; index++) {
      const message = messageOf(index, plan, draw, (user) => busy.has(user));
      expect(busy.has(message.user)).toBe(false);
      busy.add(message.user);
      // The oldest unanswered is answered: half the users are waiting at any time.
      if (busy.size > 10) busy.delete([...busy][0]!);
    }
  });

  it("replays the bench's random users through nothing but their sessions' order: follow-ups wait, the others do not; patient users never follow up", () => {
    const random = simulate(["--rates=25", "--seconds=20"], 100);
    expect(random.behindChat.length).toBeGreaterThan(20);
    expect(Math.max(...random.own)).toBe(100);
    expect(Math.max(...random.all)).toBeGreaterThan(2_000);
    const patient = simulate(["--rates=25", "--seconds=20", "--patient"], 100);
    expect(patient.behindChat).toEqual([]);
    expect(Math.max(...patient.all)).toBe(100);
  });
});
