/**
 * A button press survives a gateway crash (issue 28 item 7): Discord never delivers an
 * interaction again, so the press must be stored before it is acknowledged. A gateway whose
 * store never answers (frozen, then killed) acknowledges nothing: the user's client says "This
 * interaction failed", the button stays, and the press made again is stored and acknowledged.
 */
import { describe, expect, it, vi } from "vitest";
import type { SubmitResult } from "../../../src/adapters/channel-adapter.js";
import { IDS } from "../../fakes/fake-discord.js";
import { reply, useAdapterHarness } from "./harness.js";

describe("Discord button presses and the acknowledgement", () => {
  const h = useAdapterHarness();

  async function approvalRequest(adapter: Awaited<ReturnType<typeof h.startAdapter>>): Promise<string> {
    await adapter.send(reply("Run write_file?", { actions: [{ id: "approve:1", label: "Approve" }, { id: "deny:1", label: "Deny", style: "danger" }] }), { fromPart: 0, onPartSent: async () => undefined });
    const request = h.fake.botMessages(IDS.textChannel).at(-1);
    if (!request) throw new Error("no approval request was posted");
    return String(request.id);
  }

  it("acknowledges a press only once the ingress stored it", async () => {
    const adapter = await h.startAdapter();
    const requestId = await approvalRequest(adapter);
    let store = (_result: SubmitResult): void => {};
    h.ingress.script.push(() => new Promise<SubmitResult>((resolve) => { store = resolve; }));
    const pressId = h.fake.dispatchButtonPress(IDS.textChannel, requestId, "approve:1");
    await vi.waitFor(() => expect(h.ingress.submitted.map((message) => message.messageId)).toEqual([`ix:${pressId}`]));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(h.fake.interactionCallbacks).toEqual([]);
    store({ status: "accepted" });
    await vi.waitFor(() => expect(h.fake.interactionCallbacks).toEqual([{ id: pressId, type: 6, flags: 0, late: false }]));
  });

  it("a gateway killed before the store answered acknowledged nothing; the press made again is stored once and acknowledged", async () => {
    const crashing = await h.startAdapter({ submitAttemptTimeoutMs: 50 });
    const requestId = await approvalRequest(crashing);
    // Every attempt of the first gateway hangs (a frozen Redis); the gateway then dies.
    const frozen = () => new Promise<SubmitResult>(() => undefined);
    h.ingress.script.push(frozen, frozen, frozen);
    const lostPress = h.fake.dispatchButtonPress(IDS.textChannel, requestId, "approve:1");
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(3));
    await crashing.stop();
    expect(h.fake.interactionCallbacks).toEqual([]);

    // The user's client showed "This interaction failed"; the button is still there.
    await h.startAdapter();
    const press = h.fake.dispatchButtonPress(IDS.textChannel, requestId, "approve:1");
    await vi.waitFor(() => expect(h.fake.interactionCallbacks).toEqual([{ id: press, type: 6, flags: 0, late: false }]));
    expect(h.ingress.submitted.map((message) => message.messageId)).toEqual([`ix:${lostPress}`, `ix:${lostPress}`, `ix:${lostPress}`, `ix:${press}`]);
  });
});
