/**
 * Creating and changing scheduled items on real Redis with the real alarm queue: confirmations
 * with the absolute time, caps per chat and per user (the 51st is refused politely), who may
 * change what in a group, and what goes when a chat or a user's access does.
 */
import { describe, expect, it } from "vitest";
import { checkinCommand, createScheduleTool, type Requester } from "../../../src/schedule/index.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { ADA_DM, ARMED_STATES, inGroup, useScheduleHarness, type ScheduleHarness } from "../../helpers/schedule.js";

const ARMED = ARMED_STATES;
const at = (iso: string) => Date.parse(iso);
const setUp = useScheduleHarness();

const remind = (h: ScheduleHarness, requester: Requester, text: string, when: { at?: string; in?: string; every?: string; cron?: string } = { in: "1h" }) =>
  h.service.create(requester, { kind: "reminder", text, when });

describe("creating", () => {
  it("confirms with the absolute date, time and zone, stores the item and arms its alarm", async () => {
    const h = setUp();
    const result = await remind(h, ADA_DM, "Call the bank", { at: "tomorrow 09:00" });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.text).toBe("Scheduled r1, a reminder: “Call the bank” — Sun 29 Mar 2026, 09:00 (Europe/Berlin, UTC+02:00).");
    expect(await h.store.get("r1")).toMatchObject({
      sessionKey: "tg:5012345678", kind: "reminder", text: "Call the bank", timeZone: "Europe/Berlin",
      nextRunAt: at("2026-03-29T07:00:00Z"), paused: false, creator: { userId: "5012345678", userName: "Ada" },
    });
    expect(ARMED).toContain(await h.alarmState("r1", at("2026-03-29T07:00:00Z")));

    const weekly = await h.service.create(ADA_DM, { kind: "task", text: "Summarise the week", when: { cron: "0 9 * * 1" } });
    expect(weekly.text).toBe("Scheduled r2, a task: “Summarise the week” — next Mon 30 Mar 2026, 09:00 (Europe/Berlin, UTC+02:00), then on cron \"0 9 * * 1\" (Europe/Berlin).");
  });

  it("reads times in the requester's zone and falls back to UTC for an unknown one", async () => {
    const h = setUp();
    const tokyo = await remind(h, { ...ADA_DM, timeZone: "Asia/Tokyo" }, "sushi", { at: "2026-03-29T12:00" });
    expect(tokyo.ok && tokyo.item.nextRunAt).toBe(at("2026-03-29T03:00:00Z"));
    const nowhere = await remind(h, { ...ADA_DM, timeZone: "Mars/Olympus" }, "dust", { at: "2026-03-29T12:00" });
    expect(nowhere.ok && nowhere.item.timeZone).toBe("UTC");
  });

  it("refuses politely, and stores nothing, when the time or the text is wrong", async () => {
    const h = setUp();
    expect((await remind(h, ADA_DM, "x", { every: "1m" })).text).toMatch(/at most once every 5 minutes/);
    expect((await remind(h, ADA_DM, "  ")).text).toBe("What should the reminder say? The text is empty.");
    expect((await remind(h, ADA_DM, "y".repeat(2_001))).text).toMatch(/too long for a reminder \(2001 characters; at most 2000\)/);
    expect(await h.store.allIds()).toEqual([]);
  });
});

describe("caps (SCHEDULE_MAX_ITEMS)", () => {
  it("refuses the 51st item of a chat politely; after a cancel there is room again", async () => {
    const h = setUp();
    const ada = inGroup("1", "Ada");
    const bob = inGroup("2", "Bob");
    for (let index = 0; index < 25; index++) expect((await remind(h, ada, `a${index}`)).ok).toBe(true);
    for (let index = 0; index < 25; index++) expect((await remind(h, bob, `b${index}`)).ok).toBe(true);
    const refused = await remind(h, inGroup("3", "Cleo"), "one too many");
    expect(refused).toEqual({
      ok: false,
      text: "Sorry, I can't schedule that: This chat already has 50 reminders and scheduled tasks, which is the limit. Cancel one first (/reminders lists them, /reminders cancel <id> removes one).",
    });
    expect(await h.store.allIds()).toHaveLength(50);
    expect((await h.alarms.queue.getJobCountByTypes("waiting", "delayed"))).toBe(50);

    expect((await h.service.cancel(ada, "r1")).ok).toBe(true);
    expect((await remind(h, inGroup("3", "Cleo"), "now it fits")).ok).toBe(true);
  });

  it("refuses a user's 51st item across chats", async () => {
    const h = setUp();
    const adaInGroup = inGroup("5012345678", "Ada");
    for (let index = 0; index < 30; index++) expect((await remind(h, ADA_DM, `dm${index}`)).ok).toBe(true);
    for (let index = 0; index < 20; index++) expect((await remind(h, adaInGroup, `g${index}`)).ok).toBe(true);
    const refused = await remind(h, inGroup("5012345678", "Ada", "-100888"), "elsewhere");
    expect(refused.ok).toBe(false);
    expect(refused.text).toMatch(/^Sorry, I can't schedule that: You already have 50 reminders/);
    // Someone else in that chat is not affected by Ada's cap.
    expect((await remind(h, inGroup("2", "Bob", "-100888"), "mine")).ok).toBe(true);
  });
});

describe("changing and cancelling", () => {
  it("in a group only the creator or an admin may change an item; anyone may list them", async () => {
    const h = setUp();
    const ada = inGroup("1", "Ada");
    const bob = inGroup("2", "Bob");
    const admin = inGroup("999", "Operator");
    const created = await remind(h, ada, "Ada's reminder");
    expect(created.ok).toBe(true);

    for (const attempt of [h.service.cancel(bob, "r1"), h.service.pause(bob, "r1"), h.service.edit(bob, "r1", { text: "mine now" })]) {
      expect(await attempt).toEqual({ ok: false, text: "Only Ada, who set r1, or an admin of this bot can change or cancel it." });
    }
    expect(await h.service.listText(bob)).toMatch(/^Reminders and scheduled tasks \(1\):\nr1 · reminder, by Ada · Sat 28 Mar 2026, 11:00 \(Europe\/Berlin, UTC\+01:00\) · “Ada's reminder”/);
    expect((await h.service.edit(ada, "r1", { text: "Ada's own" })).ok).toBe(true);
    expect((await h.service.cancel(admin, "r1")).text).toBe("Cancelled r1: “Ada's own”.");
    expect(await h.alarmState("r1", at("2026-03-28T10:00:00Z"))).toBe("unknown");
  });

  it("never reaches another conversation's items", async () => {
    const h = setUp();
    await remind(h, ADA_DM, "private");
    const other = inGroup("5012345678", "Ada");
    expect(await h.service.cancel(other, "r1")).toEqual({ ok: false, text: "There is no reminder or scheduled task \"r1\" in this chat. /reminders lists them." });
    expect(await h.service.list(other)).toEqual([]);
    expect((await h.service.cancel(ADA_DM, "nonsense")).ok).toBe(false);
  });

  it("moves the alarm on edit, drops it on pause, re-arms on resume", async () => {
    const h = setUp();
    await remind(h, ADA_DM, "gym", { at: "2026-03-30T18:00" });
    const first = at("2026-03-30T16:00:00Z");
    expect(ARMED).toContain(await h.alarmState("r1", first));

    const edited = await h.service.edit(ADA_DM, "r1", { when: { every: "1d", at: "2026-03-30T19:00" } });
    expect(edited.text).toBe("Changed r1, a reminder: “gym” — next Mon 30 Mar 2026, 19:00 (Europe/Berlin, UTC+02:00), then every 1 day.");
    const second = at("2026-03-30T17:00:00Z");
    expect(await h.alarmState("r1", first)).toBe("unknown");
    expect(ARMED).toContain(await h.alarmState("r1", second));

    expect((await h.service.pause(ADA_DM, "r1")).text).toMatch(/^Paused r1, .*\(paused\)\.$/);
    expect(await h.alarmState("r1", second)).toBe("unknown");
    expect((await h.service.pause(ADA_DM, "r1")).text).toBe("r1 is already paused.");

    // Resumed after its run went by: a recurrence goes on from now.
    h.clock.now = at("2026-03-31T08:00:00Z");
    const resumed = await h.service.resume(ADA_DM, "r1");
    expect(resumed.ok && resumed.item.nextRunAt).toBe(at("2026-03-31T17:00:00Z"));
    expect(ARMED).toContain(await h.alarmState("r1", at("2026-03-31T17:00:00Z")));
  });

  it("an edit that raced another change is refused, not lost", async () => {
    const h = setUp();
    await remind(h, ADA_DM, "v1");
    const stale = await h.store.get("r1");
    expect((await h.service.edit(ADA_DM, "r1", { text: "v2" })).ok).toBe(true);
    expect(await h.store.update({ ...stale!, text: "v1 again" })).toBe("conflict");
    expect((await h.store.get("r1"))?.text).toBe("v2");
  });
});

describe("when a chat or an access goes away", () => {
  it("removeChat drops every item of the chat and its alarms, and nothing else", async () => {
    const h = setUp();
    await remind(h, inGroup("1", "Ada"), "group one");
    await remind(h, inGroup("2", "Bob"), "group two");
    await remind(h, ADA_DM, "private");
    expect(await h.service.removeChat("telegram", "-100777")).toBe(2);
    expect(await h.store.allIds()).toEqual(["r3"]);
    expect(await h.alarms.queue.getJobCountByTypes("waiting", "delayed")).toBe(1);
  });

  it("removeUserPrivateItems drops what the user set in private chats, not in groups", async () => {
    const h = setUp();
    await remind(h, ADA_DM, "private");
    await remind(h, inGroup("5012345678", "Ada"), "in the group");
    expect(await h.service.removeUserPrivateItems("telegram", "5012345678")).toBe(1);
    expect((await h.store.getMany(await h.store.allIds())).map((item) => item.text)).toEqual(["in the group"]);
  });

  it("moveChat takes a migrated group's items to the new chat id and session, once", async () => {
    const h = setUp();
    const move = { platform: "telegram" as const, fromChatId: "-4001", toChatId: "-1004001", fromSessionKey: "tg:-4001", toSessionKey: "tg:-1004001" };
    const grace = inGroup("7", "Grace", move.fromChatId);
    await remind(h, grace, "water the plants", { every: "1d" });
    await remind(h, grace, "stand-up", { in: "2h" });
    await remind(h, ADA_DM, "private");
    const before = await h.store.get("r1");

    expect(await h.service.moveChat(move)).toBe(2);
    expect(await h.service.moveChat(move)).toBe(0);
    expect(await h.store.listChat("telegram", move.fromChatId)).toEqual([]);
    const moved = inGroup("7", "Grace", move.toChatId);
    expect((await h.service.list(moved)).map((item) => [item.id, item.chat.chatId, item.sessionKey])).toEqual([
      ["r2", move.toChatId, move.toSessionKey],
      ["r1", move.toChatId, move.toSessionKey],
    ]);
    // Timing, owner and alarm are untouched; the owner may still change it from the new chat.
    expect(await h.store.get("r1")).toMatchObject({ nextRunAt: before!.nextRunAt, creator: { userId: "7" }, recurrence: before!.recurrence });
    expect(ARMED).toContain(await h.alarmState("r1", before!.nextRunAt));
    expect((await h.service.pause(moved, "r1")).ok).toBe(true);
    expect((await h.store.get("r3"))?.chat.chatId).toBe(ADA_DM.chatId);
  });

  it("rearmAll restores a lost alarm and skips paused items", async () => {
    const h = setUp();
    await remind(h, ADA_DM, "one");
    await remind(h, ADA_DM, "two");
    await h.service.pause(ADA_DM, "r2");
    await h.alarms.queue.obliterate({ force: true });
    expect(await h.service.rearmAll()).toBe(1);
    expect(ARMED).toContain(await h.alarmState("r1", (await h.store.get("r1"))!.nextRunAt));
    expect(await h.alarmState("r2", (await h.store.get("r2"))!.nextRunAt)).toBe("unknown");
  });
});

describe("the schedule tool", () => {
  const origin = inbound({ platform: "telegram", chatId: "5012345678", sessionKey: "tg:5012345678", userId: "5012345678", userName: "Ada", text: "remind me" });
  const context = { origin, timeZone: "Europe/Berlin" };

  it("answers a re-run turn's edit, pause, resume and cancel as the first run did (issue 28 item 1)", async () => {
    const h = setUp();
    const tool = createScheduleTool(h.service);
    const turn = { ...context, sessionKey: "tg:5012345678", turnVersion: 7 };
    await tool.run({ action: "create", text: "Call the bank", at: "tomorrow 09:00" }, turn);
    const calls = [{ action: "edit", id: "r1", in: "3h" }, { action: "pause", id: "r1" }, { action: "resume", id: "r1" }, { action: "cancel", id: "r1" }];
    const first = [];
    for (const args of calls) first.push(await tool.run(args, turn));
    expect(first[3]).toBe("Cancelled r1: “Call the bank”.");
    // The turn fails after its tool calls and runs again with the same version: same answers.
    for (const [index, args] of calls.entries()) expect(await tool.run(args, turn)).toBe(first[index]);
    // A later turn (a new version) is a new request.
    expect(await tool.run({ action: "cancel", id: "r1" }, { ...turn, turnVersion: 8 })).not.toBe(first[3]);
  });

  it("creates in the chat's zone, lists, edits and cancels for the speaker of the turn", async () => {
    const h = setUp();
    const tool = createScheduleTool(h.service);
    expect(await tool.run({ action: "create", text: "Call the bank", at: "tomorrow 09:00" }, context))
      .toBe("Scheduled r1, a reminder: “Call the bank” — Sun 29 Mar 2026, 09:00 (Europe/Berlin, UTC+02:00).");
    expect(await tool.run({ action: "create", kind: "task", text: "Plan the week", cron: "0 8 * * 1" }, context)).toMatch(/^Scheduled r2, a task/);
    expect(await tool.run({ action: "list" }, context)).toMatch(/^Reminders and scheduled tasks \(2\):\nr1 · reminder · Sun 29 Mar 2026, 09:00 .*\nr2 · task · next Mon 30 Mar 2026, 08:00/);
    expect(await tool.run({ action: "edit", id: "r1", in: "3h" }, context)).toBe("Changed r1, a reminder: “Call the bank” — Sat 28 Mar 2026, 13:00 (Europe/Berlin, UTC+01:00).");
    expect(await tool.run({ action: "cancel", id: "R1" }, context)).toBe("Cancelled r1: “Call the bank”.");
    expect((await h.store.get("r2"))?.creator).toEqual({ userId: "5012345678", userName: "Ada" });
  });

  it("answers refusals as text and throws on calls it cannot make sense of", async () => {
    const h = setUp();
    const tool = createScheduleTool(h.service);
    expect(await tool.run({ action: "create", text: "x", every: "10s" }, context)).toMatch(/at most once every 5 minutes/);
    await expect(tool.run({ action: "create", kind: "nag", text: "x", in: "1h" }, context)).rejects.toThrow(/kind must be "reminder", "task" or "checkin"/);
    await expect(tool.run({ action: "snooze", id: "r1" }, context)).rejects.toThrow(/unknown action "snooze"/);
    await expect(tool.run({ action: "edit", id: "r1" }, context)).rejects.toThrow(/edit needs a new text, kind or time/);
    await expect(tool.run({ action: "list" }, {})).rejects.toThrow(/no chat/);
  });
});

describe("/checkin (issue 35 item 3)", () => {
  it("starts one check-in per chat, replaces it, shows it, resumes a paused one and stops it", async () => {
    const h = setUp();
    expect((await checkinCommand(h.service, ADA_DM, "")).text).toMatch(/^No check-ins in this chat\. \/checkin every 4h starts them/);
    const started = await checkinCommand(h.service, ADA_DM, "every 4h the visa application");
    expect(started.restarted).toBe(true);
    expect(started.text).toMatch(/^Check-ins on\. Check-in r\d+: next .*, then every 4 hours · watching: the visa application\.$/);
    const replaced = await checkinCommand(h.service, ADA_DM, "every 6h");
    expect(replaced.text).toContain("every 6 hours");
    const items = await h.service.chatItems(ADA_DM, "checkin");
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ kind: "checkin", text: "anything worth following up", paused: false });
    expect(ARMED_STATES).toContain(await h.alarmState(items[0]!.id, items[0]!.nextRunAt));
    // Other chats and other kinds are not touched; /reminders lists it as a check-in.
    await h.service.create(ADA_DM, { kind: "reminder", text: "tea", when: { in: "1h" } });
    expect(await h.service.listText(ADA_DM)).toContain("check-in");

    expect((await checkinCommand(h.service, ADA_DM, "on")).text).toBe("Check-ins are already on.");
    await h.service.pause(ADA_DM, items[0]!.id);
    expect((await checkinCommand(h.service, ADA_DM, "status")).text).toContain("(paused: /checkin on resumes it)");
    const resumed = await checkinCommand(h.service, ADA_DM, "on");
    expect(resumed).toMatchObject({ restarted: true });
    expect(resumed.text).toMatch(/^Check-ins resumed\./);
    expect((await checkinCommand(h.service, ADA_DM, "off")).text).toBe("Check-ins stopped.");
    expect(await h.service.chatItems(ADA_DM, "checkin")).toEqual([]);
    expect((await h.service.list(ADA_DM)).map((item) => item.kind)).toEqual(["reminder"]);
    expect((await checkinCommand(h.service, ADA_DM, "every")).text).toMatch(/^Usage: \/checkin/);
  });

  it("through the schedule tool, a check-in waits for the asker's button like a recurring task", () => {
    const tool = createScheduleTool({} as never);
    expect(tool.needsApproval({ action: "create", kind: "checkin", every: "4h", text: "the visa" })).toBe(true);
    expect(tool.needsApproval({ action: "edit", id: "r3", kind: "checkin" })).toBe(true);
    expect(tool.needsApproval({ action: "create", kind: "reminder", every: "4h", text: "stretch" })).toBe(false);
  });
});
