/**
 * A chat's own time zone (`/timezone`) through the real pipeline (private redis-server, worker,
 * fake LLM), the deployment's TZ being UTC: the next request after a change carries its stamp in
 * the chat's zone, earlier stamps stay as written, a reminder "09:00" is armed for 09:00 there,
 * /context reads fold dates in it, and the setting survives /new and a restart. Expected wall
 * times are plain arithmetic on fixed instants: Asia/Tokyo is UTC+9 all year (no daylight saving
 * time), never our formatter.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAdmin } from "../../../src/cli/admin-commands.js";
import { createFiringQueue, createRedis, firingJobId } from "../../../src/queue/index.js";
import { ScheduleStore } from "../../../src/schedule/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { parseStamp, startFakeLlm, textOf, type FakeLlm, type ParsedStamp } from "../../fakes/fake-llm.js";
import { isFlushRequest, isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { testConfig, testEnv } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { schedulingModel } from "../../helpers/schedule.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
/** The wall time of `at` in a zone `offsetHours` ahead of UTC, as a stamp reads it. */
const wall = (at: number, offsetHours: number, zone: string): Omit<ParsedStamp, "rest" | "gap"> => {
  const shifted = new Date(at + offsetHours * HOUR);
  return { weekday: WEEKDAYS[shifted.getUTCDay()]!, date: shifted.toISOString().slice(0, 10), time: shifted.toISOString().slice(11, 16), zone };
};
const tokyo = (at: number) => wall(at, 9, "Asia/Tokyo");
const utc = (at: number) => wall(at, 0, "UTC");

/** Fixed send times, a day apart, late in the UTC evening: Tokyo's date is already the next one. */
const T0 = Date.parse("2026-11-20T22:40:00Z");
const at = (day: number) => T0 + day * DAY;

describe("a chat's own time zone (/timezone)", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let env: Record<string, string>;
  const adapter = new RecordingAdapter("telegram");
  let count = 0;
  const PRIVATE = { userId: "1", chatId: "1" };
  const GROUP_MEMBER = { userId: "1", chatId: "-100", group: true };
  const GROUP_ADMIN = { userId: "2", chatId: "-100", group: true };

  /** Sends one message and returns the reply it got. */
  const say = async (text: string, who: { userId: string; chatId: string; group?: boolean } = PRIVATE, sentAt = Date.now()) => {
    const expected = adapter.sent.length + 1;
    await adapter.submit(inbound({
      platform: "telegram", chatId: who.chatId, sessionKey: `tg:${who.chatId}`, userId: who.userId, userName: `user${who.userId}`,
      chatType: who.group ? "group" : "private", text, messageId: `m${++count}`, sentAt,
    }));
    await adapter.waitFor((sent) => sent.length >= expected);
    return adapter.sent[expected - 1]!.reply.text;
  };
  const mainRequests = () => llm.requests.filter((request) => !isSummarizerRequest(request) && !isFlushRequest(request));
  /** The stamps of the user messages of the latest request, oldest first. */
  const stampsOfLastRequest = () => mainRequests().at(-1)!.body.messages
    .filter((message) => message.role === "user")
    .map((message) => parseStamp(textOf(message.content)));
  const lastStamp = () => {
    const stamp = stampsOfLastRequest().at(-1);
    if (!stamp) throw new Error("the last user message carries no stamp");
    const { gap: _gap, rest: _rest, ...when } = stamp;
    return when;
  };
  const start = () => startPipeline(testConfig(env), [adapter]);
  const withRedis = async <T>(use: (redis: ReturnType<typeof createRedis>) => Promise<T>): Promise<T> => {
    const redis = createRedis(env.REDIS_URL!);
    try {
      return await use(redis);
    } finally {
      redis.disconnect();
    }
  };

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.route(isSummarizerRequest, { text: "## Goal\nKeep time straight." });
    llm.setHandler(schedulingModel((text) => (/wake me at 09:00$/.test(text) ? { action: "create", kind: "reminder", at: "09:00", text: "wake up" } : undefined)));
    env = testEnv({
      LLM_BASE_URL: llm.url,
      TZ: "UTC",
      ALLOWED_TELEGRAM_USERS: "1,2",
      ALLOWED_TELEGRAM_CHATS: "-100",
      ADMIN_TELEGRAM_USERS: "2",
    });
    pipeline = await start();
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });

  it("shows the default, sets a zone by any spelling, and the next request is stamped in it while earlier stamps stay", async () => {
    expect(await say("/timezone")).toMatch(/^Time zone: UTC \(the default\)$/m);
    await say("before the change", PRIVATE, at(0));
    expect(lastStamp()).toEqual(utc(at(0)));

    expect(await say("/timezone asia/TOKYO")).toMatch(/^This chat's time zone is now Asia\/Tokyo \(now .*\), from the next message on\.$/);
    const shown = await say("/timezone");
    expect(shown).toMatch(/^Time zone: Asia\/Tokyo \(this chat's own; the default is UTC\)$/m);
    // The local time shown is Tokyo's: UTC+9 of the moment the command ran.
    const local = /^Local time: \w{3} (\d{4}-\d\d-\d\d) (\d\d):(\d\d) Asia\/Tokyo$/m.exec(shown);
    expect(local).not.toBeNull();
    const shownAt = Date.parse(`${local![1]}T${local![2]}:${local![3]}:00Z`) - 9 * HOUR;
    expect(Math.abs(Date.now() - shownAt)).toBeLessThan(10 * 60_000);

    await say("after the change", PRIVATE, at(1));
    const stamps = stampsOfLastRequest();
    expect(stamps.at(-1)).toMatchObject({ ...tokyo(at(1)), rest: "after the change" });
    // Nov 21 22:40 UTC is already Sunday Nov 22 in Tokyo.
    expect(tokyo(at(1))).toEqual({ weekday: "Sun", date: "2026-11-22", time: "07:40", zone: "Asia/Tokyo" });
    // Written once: the message sent before the change keeps its UTC stamp (the cached prefix).
    expect(stamps.find((stamp) => stamp?.rest === "before the change")).toMatchObject(utc(at(0)));
  });

  it("a reminder at \"09:00\" set afterwards is armed for 09:00 in the chat's zone", async () => {
    const before = Date.now();
    const reply = await say("wake me at 09:00");
    expect(reply).toMatch(/^Done\. Scheduled (r\d+), a reminder: “wake up”/);
    const id = /Scheduled (r\d+)/.exec(reply)![1]!;
    const { item, alarm } = await withRedis(async (redis) => {
      const item = await new ScheduleStore(redis, env.REDIS_PREFIX!).get(id);
      const alarms = createFiringQueue(redis, env.REDIS_PREFIX!);
      try {
        return { item, alarm: item ? await alarms.queue.getJobState(firingJobId(id, item.nextRunAt)) : "none" };
      } finally {
        await alarms.close();
      }
    });
    expect(item?.timeZone).toBe("Asia/Tokyo");
    // 09:00 in Tokyo is 00:00 UTC: the next UTC midnight after the request (not 09:00 UTC).
    expect(item!.nextRunAt % DAY).toBe(0);
    expect(item!.nextRunAt).toBeGreaterThan(before);
    expect(item!.nextRunAt - before).toBeLessThanOrEqual(DAY);
    expect(alarm).toBe("delayed");
    await say(`/reminders cancel ${id}`);
  });

  it("refuses an unknown zone and leaves the setting as it was", async () => {
    for (const wrong of ["Mars/Olympus_Mons", "+02:00", "Tokyo"]) {
      expect(await say(`/timezone ${wrong}`)).toBe(`"${wrong}" is not a time zone I know. Use an IANA name, e.g. Europe/Berlin, America/New_York, Asia/Tokyo.`);
    }
    expect(await say("/timezone")).toMatch(/^Time zone: Asia\/Tokyo \(this chat's own/m);
    await say("still Tokyo?", PRIVATE, at(2));
    expect(lastStamp()).toEqual(tokyo(at(2)));
  });

  it("in a group only an admin may change it", async () => {
    expect(await say("/timezone Europe/Berlin", GROUP_MEMBER)).toBe("Only an admin can change the time zone of a group.");
    // Anyone may look.
    expect(await say("/timezone", GROUP_MEMBER)).toMatch(/^Time zone: UTC \(the default\)$/m);
    await say("hi all", GROUP_MEMBER, at(3));
    expect(lastStamp()).toEqual(utc(at(3)));
    expect(await say("/timezone America/New_York", GROUP_ADMIN)).toMatch(/^This chat's time zone is now America\/New_York/);
    expect(await say("/timezone", GROUP_MEMBER)).toMatch(/^Time zone: America\/New_York \(this chat's own/m);
  });

  it("survives /new and a restart, and /timezone default returns to TZ", async () => {
    expect(await say("/new")).toBe("Started a new conversation. The previous one is archived.");
    await say("fresh start", PRIVATE, at(4));
    expect(stampsOfLastRequest()).toHaveLength(1);
    expect(lastStamp()).toEqual(tokyo(at(4)));

    await pipeline.close();
    pipeline = await start();
    await say("after the restart", PRIVATE, at(5));
    expect(lastStamp()).toEqual(tokyo(at(5)));
    const stored = await withRedis(async (redis) => (await new SessionStore(redis, env.REDIS_PREFIX!).load("tg:1")).chat);
    expect(stored?.timeZone).toBe("Asia/Tokyo");
    let shown = "";
    await withRedis((redis) => runAdmin({ redis, config: testConfig(env), now: Date.now(), write: (text) => { shown += text; } }, ["show", "tg:1"]));
    expect(shown).toMatch(/^Model: default; time zone: Asia\/Tokyo$/m);

    // /context reads the fold's dates in the chat's zone.
    for (let hour = 1; hour <= 6; hour++) await say(`note ${hour}: ${"the hull needs paint and the mast a new rope ".repeat(60)}`, PRIVATE, at(5) + hour * HOUR);
    expect(await say("/compress")).toMatch(/^Compacted: /);
    // en-GB medium date and short time of `at` in Tokyo, by arithmetic: "26 Nov 2026, 07:40".
    const tokyoMedium = (at: number) => {
      const shifted = new Date(at + 9 * HOUR);
      const month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][shifted.getUTCMonth()];
      return `${shifted.getUTCDate()} ${month} ${shifted.getUTCFullYear()}, ${shifted.toISOString().slice(11, 16)}`;
    };
    const sentTimes = [at(4), at(5), ...[1, 2, 3, 4, 5, 6].map((hour) => at(5) + hour * HOUR)].map(tokyoMedium);
    const fold = /^Last compaction \(manual, (.+?)\): folded \d+ messages from (.+?) to /m.exec(await say("/context"));
    expect(fold).not.toBeNull();
    expect(sentTimes).toContain(fold![2]);
    expect([tokyoMedium(Date.now()), tokyoMedium(Date.now() - 60_000)]).toContain(fold![1]);

    expect(await say("/timezone default")).toMatch(/^This chat is back to the default time zone, UTC \(now .* UTC\)\.$/);
    await say("back home", PRIVATE, at(6));
    expect(lastStamp()).toEqual(utc(at(6)));
    expect(await say("/timezone")).toMatch(/^Time zone: UTC \(the default\)$/m);
  });
});
