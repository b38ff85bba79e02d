/**
 * A preview request whose caller gives up on the way (issue 32), through the real discord.js
 * client and the fake Discord, with a send budget scripted in the test so what is asked is exact.
 *
 * At 25 messages a second over 1,000 channels, previews whose 5 s ran out while they queued in
 * discord.js were counted as creates whose answer was lost ("preview-create-outcome-unknown"):
 * each final then waited for a recovery create of its own (up to 5 s more of a delivery slot), and
 * discord.js sent the aborted request again three times, each through the budget.
 */
import { describe, expect, it, vi } from "vitest";
import type { SendBudget, SendGrant, SendRequest } from "../../../src/core/send-budget.js";
import { RetryableError } from "../../../src/errors.js";
import { RequestNotSent } from "../../../src/adapters/discord/request-outcome.js";
import { IDS, type Payload } from "../../fakes/fake-discord.js";
import { reply, useAdapterHarness } from "./harness.js";

/** Refuses previews and typing (as a budget drained by finals does); grants the rest, each final once `release` is called when held. */
class ScriptedBudget implements SendBudget {
  readonly asked: SendRequest[] = [];
  #held: Promise<void> | undefined;
  #release: (() => void) | undefined;

  holdFinals(): void {
    this.#held = new Promise((resolve) => (this.#release = resolve));
  }

  release(): void {
    this.#release?.();
    this.#held = undefined;
  }

  async take(request: SendRequest): Promise<SendGrant> {
    this.asked.push(request);
    if (request.priority === "preview" || request.priority === "typing") return { granted: false, waitMs: 1_000 };
    if (this.#held) await this.#held;
    return { granted: true, delayMs: 0 };
  }

  async penalize(): Promise<void> {}
}


describe("discord: a request that never left", { timeout: 60_000 }, () => {
  const h = useAdapterHarness();

  it("a preview whose caller gives up while it queues behind its channel's final is not sent, costs the budget nothing, and says so", async () => {
    const adapter = await h.startAdapter({ slashCommands: false });
    const budget = new ScriptedBudget();
    adapter.useSendBudget(budget);
    const channelId = IDS.textChannel;
    budget.holdFinals();
    const final = adapter.send(reply("the final"), { fromPart: 0, onPartSent: async () => {} });
    // The final holds the channel's route in discord.js (it waits for its slot in the budget).
    await vi.waitFor(() => expect(budget.asked.map((request) => request.priority)).toEqual(["final"]));
    const giveUp = new AbortController();
    const preview = adapter.previews.create({ platform: "discord", chatId: channelId }, "⏳", giveUp.signal, "pv-queued").then(() => undefined, (reason: unknown) => reason);
    // Its time is up while it waits (in the channel's queue, or about to leave it): then the final goes.
    giveUp.abort();
    budget.release();
    await final;
    const error = await preview;

    // Nothing of it went out: the renderer frees the preview (a RetryableError with a wait) instead
    // of recording a create whose outcome is unknown, which the final would have to recover.
    expect(error).toBeInstanceOf(RequestNotSent);
    expect((error as RetryableError).retryAfterMs).toBeDefined();
    expect(budget.asked.map((request) => request.priority)).toEqual(["final"]);
    const posts = h.fake.requests.filter((request) => request.method === "POST" && request.path === `/channels/${channelId}/messages`);
    expect(posts.map((request) => (request.body as Payload).content)).toEqual(["the final"]);
  });
});
