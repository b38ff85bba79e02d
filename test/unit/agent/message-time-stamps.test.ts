/**
 * MESSAGE_TIMESTAMPS (issue #11, item 3): user messages carry their send time in the chat's zone,
 * written once into the stored content (the cached prefix never changes), gaps of hours or days
 * spelled out, and the latest stamp gives the model today's date without touching the system prompt.
 */
import { describe, expect, it } from "vitest";
import { stampFor, toUserMessages } from "../../../src/agent/user-messages.js";
import { formatStamp } from "../../../src/core/time-stamp.js";
import type { InboxEntry } from "../../../src/session/store.js";
import type { SessionState } from "../../../src/session/state.js";

const entry = (text: string, sentAt: number, extra: Partial<InboxEntry> = {}): InboxEntry =>
  ({ text, sentAt, messageId: `t${sentAt}`, userId: "u1", userName: "Alice", chatId: "c1", chatType: "private", platform: "telegram", ...extra }) as InboxEntry;

const TUE = Date.UTC(2026, 11, 1, 9, 44); // Tue 2026-12-01 09:44 UTC

describe("message time stamps", () => {
  it("format the zone's wall time with weekday, date and zone, across DST and at midnight", () => {
    expect(formatStamp(TUE, "Europe/Berlin")).toBe("Tue 2026-12-01 10:44 Europe/Berlin");
    expect(formatStamp(Date.UTC(2026, 6, 1, 22, 30), "Europe/Berlin")).toBe("Thu 2026-07-02 00:30 Europe/Berlin");
    expect(formatStamp(TUE, "America/New_York")).toBe("Tue 2026-12-01 04:44 America/New_York");
    expect(formatStamp(TUE, "Not/AZone")).toBe("Tue 2026-12-01 09:44 UTC");
  });

  it("start each user message with its send time, spell out gaps of hours and days, and keep the speaker after the stamp", () => {
    let id = 0;
    const messages = toUserMessages(
      [entry("hello", TUE), entry("still there?", TUE + 5 * 60_000), entry("back", TUE + 3 * 3_600_000), entry("Let's ship it Friday", TUE + 3 * 86_400_000, { chatType: "group", userName: "Bob" })],
      () => `m${++id}`,
      { timeZone: "Europe/Berlin", previousAt: TUE - 2 * 86_400_000 },
    );
    expect(messages.map((message) => message.content)).toEqual([
      "[Tue 2026-12-01 10:44 Europe/Berlin · 2 days after the previous message] hello",
      "[Tue 2026-12-01 10:49 Europe/Berlin] still there?",
      "[Tue 2026-12-01 13:44 Europe/Berlin · 2 hours after the previous message] back",
      "[Fri 2026-12-04 10:44 Europe/Berlin · 2 days after the previous message] Bob: Let's ship it Friday",
    ]);
    expect(messages.map((message) => message.at)).toEqual([TUE, TUE + 300_000, TUE + 3 * 3_600_000, TUE + 3 * 86_400_000]);
  });

  it("are off unless MESSAGE_TIMESTAMPS is set, and use the chat's own zone over TZ", () => {
    const state = { live: [{ id: "m1", role: "system", content: "s", at: 1 }, { id: "m2", role: "assistant", content: "hi", at: TUE - 60_000 }], chat: { timeZone: "Asia/Tokyo" } } as unknown as SessionState;
    expect(stampFor({ timeZone: "Europe/Berlin" }, state)).toBeUndefined();
    expect(stampFor({ timeZone: "Europe/Berlin", messageTimeStamps: true }, state)).toEqual({ timeZone: "Asia/Tokyo", previousAt: TUE - 60_000 });
    const plain = toUserMessages([entry("hello", TUE)], () => "m3", stampFor({ timeZone: "UTC" }, state));
    expect(plain[0]!.content).toBe("hello");
  });
});
