import { describe, expect, it } from "vitest";
import { joinPasteParts, pasteWaitMs, PASTE_WAIT_MS } from "../../../src/agent/paste-parts.js";
import type { InboundMessage } from "../../../src/core/channel.js";

const part = (messageId: number, text: string, overrides: Partial<InboundMessage> = {}) => ({
  platform: "telegram" as const, sessionKey: "tg:1", chatId: "1", userId: "7", userName: "Ada", chatType: "private" as const,
  messageId: String(messageId), text, sentAt: 10_000, receivedAt: 10_000, ...overrides,
});

describe("paste parts", () => {
  it("joins the parts of one split paste, and nothing else", () => {
    const long = "x".repeat(4000);
    const joined = joinPasteParts([
      part(1, "hello"),
      part(2, long, { mayContinue: true }),
      part(3, long, { mayContinue: true, sentAt: 11_000 }),
      part(4, "tail", { sentAt: 11_000 }),
      part(5, "a new question", { sentAt: 11_000 }),
    ]);
    expect(joined.map((entry) => entry.messageId)).toEqual(["1", "2", "5"]);
    expect(joined[1]?.text).toBe(`${long}\n${long}\ntail`);
  });

  it("keeps apart another sender, a gap in ids, and a late message", () => {
    const long = part(1, "y".repeat(4000), { mayContinue: true });
    expect(joinPasteParts([long, part(2, "b", { userId: "8" })])).toHaveLength(2);
    expect(joinPasteParts([long, part(3, "b")])).toHaveLength(2);
    expect(joinPasteParts([long, part(2, "b", { sentAt: 13_000 })])).toHaveLength(2);
    expect(joinPasteParts([long, part(2, "b", { sentAt: 12_000 })])).toHaveLength(1);
  });

  it("waits for more parts only while the newest part may continue and is fresh", () => {
    expect(pasteWaitMs([part(1, "short")], 10_000)).toBe(0);
    expect(pasteWaitMs([part(1, "long", { mayContinue: true })], 10_400)).toBe(PASTE_WAIT_MS - 400);
    expect(pasteWaitMs([part(1, "long", { mayContinue: true })], 10_000 + PASTE_WAIT_MS)).toBe(0);
  });
});
