/**
 * Issue 28: the approvals a press answered stay known across a fresh session (/new, the idle
 * reset), whose chat still shows their outcomes: a late press on one is told privately, leaves
 * the request message alone, and never becomes part of the new conversation. The turn's side of
 * it (the gateway refuses such a press before storing it when it can: e2e/telegram-approval.test.ts).
 */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../../src/logger.js";
import { ToolCatalog } from "../../../src/tools/index.js";
import { engineOver, freshState, say, scriptedLlm, turn } from "../../helpers/agent-turns.js";
import { inbound } from "../../helpers/recording-adapter.js";

const ADA = "42";
const press = (approvalId: string) => ({
  ...inbound({ platform: "telegram", chatId: ADA, sessionKey: `tg:${ADA}`, chatType: "private", userId: ADA, userName: "Ada", text: "(button)", messageId: "p9",
    action: { id: `approve:${approvalId}`, sourceMessageId: "900" } }),
  receivedAt: 0,
});

describe("answered approvals across a fresh session (issue 28)", () => {
  const engine = (idleResetMs = 0) => engineOver(scriptedLlm([{ content: "fresh", toolCalls: [] }]), new ToolCatalog({ builtins: [], logger: silentLogger }), { idleResetMs });
  const answeredBefore = () => {
    const state = freshState();
    state.answeredApprovals = ["old-approval"];
    state.live.push({ id: "m1", at: 0, role: "user", content: "earlier" });
    return state;
  };

  it("/new keeps them: a late press on one is told privately and replaces nothing", async () => {
    const reset = await turn(engine(), [say(ADA, ADA, "Ada", "/new", "501")], answeredBefore());
    expect(reset.archivedSessionId).toBeDefined();
    expect(reset.state.answeredApprovals).toEqual(["old-approval"]);
    const pressed = await turn(engine(), [press("old-approval")], reset.state);
    expect(pressed.replies).toMatchObject([{ text: "This request was already answered.", private: true }]);
    expect(pressed.replies[0]?.replaces).toBeUndefined();
    expect(pressed.transcript).toEqual([]);
  });

  it("the idle reset keeps them too, when the late press is what wakes the session", async () => {
    const pressed = await turn(engine(60_000), [press("old-approval")], answeredBefore());
    expect(pressed.archivedSessionId).toBeDefined();
    expect(pressed.state.answeredApprovals).toEqual(["old-approval"]);
    expect(pressed.replies).toMatchObject([{ text: "This request was already answered.", private: true }]);
    expect(pressed.replies[0]?.replaces).toBeUndefined();
  });
});
