import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAdmin, type AdminContext } from "../../../src/cli/admin-commands.js";
import { createRedis } from "../../../src/queue/index.js";
import { sessionKeys } from "../../../src/session/keys.js";
import { readUsageLedger } from "../../../src/session/turn-history.js";
import { startFakeLlm, withoutStamp, type FakeLlm } from "../../fakes/fake-llm.js";
import { spawnApp } from "../../helpers/app-process.js";
import { testConfig, testEnv } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import type { Config } from "../../../config/index.js";

describe("npm run admin against a real Redis", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let env: Record<string, string>;
  let config: Config;
  const redis = createRedis(testEnv().REDIS_URL!);
  const adapter = new RecordingAdapter("telegram");
  let count = 0;
  const say = async (text: string, userId: string, chatId: string, group = false) => {
    const expected = adapter.sent.length + 1;
    await adapter.submit(inbound({ platform: "telegram", chatId, sessionKey: `tg:${chatId}`, userId, userName: `user${userId}`, chatType: group ? "group" : "private", text, messageId: `a${++count}` }));
    await adapter.waitFor((sent) => sent.length >= expected);
  };
  const admin = async (...argv: string[]) => {
    let output = "";
    const context: AdminContext = { redis, config, now: Date.now(), write: (text) => { output += text; } };
    const code = await runAdmin(context, argv);
    return { code, output };
  };

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.setHandler(() => ({ text: "noted", usage: { prompt_tokens: 300, completion_tokens: 20 } }));
    env = testEnv({ LLM_BASE_URL: llm.url, ALLOWED_TELEGRAM_USERS: "1,2", ALLOWED_TELEGRAM_CHATS: "-100", LLM_PRICE_INPUT: "1", LLM_PRICE_OUTPUT: "2" });
    config = testConfig(env);
    pipeline = await startPipeline(config, [adapter]);
    await say("hello one — the code is ZX-81 🦊", "1", "1");
    await say("hello two", "1", "1");
    await say("group hello", "2", "-100", true);
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
    await redis.quit();
  });

  it("sessions lists every session with size, age, last activity and compactions", async () => {
    const { code, output } = await admin("sessions");
    expect(code).toBe(0);
    const lines = output.trim().split("\n");
    expect(lines[0]).toMatch(/^SESSION\s+CONTEXT\s+TRANSCRIPT\s+SIZE\s+AGE\s+LAST ACTIVITY\s+COMPACTIONS\s+MODEL$/);
    expect(lines).toHaveLength(3);
    expect(output).toMatch(/^tg:1\s+5 msgs\s+4 msgs\s+\d+KB\s+0m\s+0m ago\s+0\s+default$/m);
    expect(output).toMatch(/^tg:-100\s+3 msgs\s+2 msgs\s+\d+KB\s+0m\s+0m ago\s+0\s+default$/m);
  });

  it("show prints one session and its live context; export the state and the whole transcript", async () => {
    const shown = await admin("show", "tg:1");
    expect(shown.output).toMatch(/^Session tg:1 \(conversation [0-9a-f-]{36}, version 2\)$/m);
    // The live context as the model reads it: the send-time stamp first (MESSAGE_TIMESTAMPS).
    expect(shown.output).toMatch(/^m\d+ \S+ user: \[\w{3} \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\] hello one — the code is ZX-81 🦊$/m);
    expect(shown.output).toMatch(/^Tokens: 600 in \(0 cached\), 40 out, over 2 turns$/m);
    expect(shown.output).toMatch(/^Model: default; time zone: default \(UTC\)$/m);
    const exported = JSON.parse((await admin("export", "tg:1")).output) as { sessionKey: string; state: { live: unknown[] }; transcript: Array<{ content: string }> };
    expect(exported.sessionKey).toBe("tg:1");
    expect(exported.state.live).toHaveLength(5);
    expect(exported.transcript.map((message) => withoutStamp(message.content))).toEqual(["hello one — the code is ZX-81 🦊", "noted", "hello two", "noted"]);
    await expect(admin("show", "tg:404")).rejects.toThrow(/no session tg:404/);
  });

  it("budgets shows what every chat and user spent today and this month", async () => {
    const { output } = await admin("budgets");
    expect(output).toMatch(/^ACCOUNT\s+TODAY\s+DAILY LIMIT\s+THIS MONTH\s+MONTHLY LIMIT$/m);
    // Two answers at 300 in + 20 out, $1 / $2 per million.
    expect(output).toMatch(/^chat tg:1\s+\$0\.0007 \/ 640 tok\s+none\s+\$0\.0007 \/ 640 tok\s+none$/m);
    expect(output).toMatch(/^user tg:1\s+\$0\.0007 \/ 640 tok/m);
    expect(output).toMatch(/^user tg:2\s+\$0\.0003 \/ 320 tok/m);
  });

  it("reset archives the conversation through the session's inbox, and the chat is told", async () => {
    const before = adapter.sent.length;
    const { output } = await admin("reset", "tg:1");
    expect(output).toMatch(/^Reset of tg:1 queued/);
    await adapter.waitFor((sent) => sent.length > before);
    expect(adapter.sent.at(-1)!.reply.text).toBe("Started a new conversation. The previous one is archived.");
    expect(adapter.sent.at(-1)!.reply.target.chatId).toBe("1");
    expect((await admin("sessions")).output).toMatch(/^tg:1\s+\d msgs\s+0 msgs/m);
  });

  it("delete-user removes the private chat, the approval, and the budget counters", async () => {
    const { output } = await admin("delete-user", "telegram:1");
    expect(output).toMatch(/^Deleted telegram:1: 1 private conversation\(s\) \(tg:1\), \d+ key\(s\), 0 reminder\(s\) or task\(s\)\.\nBudget counters and limits: \d+ key\(s\)\.$/m);
    expect(await redis.exists(sessionKeys(config.REDIS_PREFIX, "tg:1").state)).toBe(0);
    expect(await redis.exists(sessionKeys(config.REDIS_PREFIX, "tg:1").transcript)).toBe(0);
    const sessions = (await admin("sessions")).output;
    expect(sessions).not.toMatch(/^tg:1\s/m);
    expect(sessions).toMatch(/^tg:-100\s/m);
    expect((await admin("budgets")).output).not.toMatch(/^user tg:1\s/m);
    // The console's usage ledger forgets them and their private chat; the group stays.
    const ledger = await readUsageLedger(redis, config.REDIS_PREFIX, new Date().toISOString().slice(0, 10));
    expect(ledger.get("user")?.has("telegram:1")).toBe(false);
    expect(ledger.get("chat")?.has("tg:1")).toBe(false);
    expect(ledger.get("chat")?.has("tg:-100")).toBe(true);
    await expect(admin("delete-user", "nobody")).rejects.toThrow(/platform/);
    const exported = JSON.parse((await admin("export-user", "telegram:2")).output) as object;
    // Group messages are the group's: the export holds the user's memory and private chats.
    expect(exported).toMatchObject({ user: "telegram:2", sessions: [] });
  });

  it("runs as npm run admin does: a process with the bot's configuration", async () => {
    const cli = spawnApp(env, { entry: "src/cli/admin.ts", args: ["sessions"] });
    expect(await cli.exited()).toBe(0);
    expect(cli.stdout()).toMatch(/^tg:-100\s/m);
    const wrong = spawnApp(env, { entry: "src/cli/admin.ts", args: ["frobnicate"] });
    expect(await wrong.exited()).toBe(2);
    expect(wrong.stderr()).toContain("unknown command: frobnicate");
  });

  it("sessions lists a session whose state cannot be read as unreadable, with its key, and the others as usual", async () => {
    const broken = { "tg:901": "{\"live\": [", "tg:902": "42" };
    for (const [sessionKey, raw] of Object.entries(broken)) await redis.set(sessionKeys(config.REDIS_PREFIX, sessionKey).state, raw);
    // A key of the wrong type: never shown as an empty session.
    await redis.hset(sessionKeys(config.REDIS_PREFIX, "tg:903").state, "live", "[]");
    try {
      const { code, output } = await admin("sessions");
      expect(code).toBe(1);
      expect(output).toMatch(/^tg:-100\s+\d+ msgs\s+\d+ msgs\s+\d+KB/m);
      for (const sessionKey of ["tg:901", "tg:902", "tg:903"]) {
        expect(output).toMatch(new RegExp(`^${sessionKey}\\s+unreadable\\s+-`, "m"));
        expect(output).toMatch(new RegExp(`^${sessionKey}: state unreadable: \\S`, "m"));
      }
      expect(output).toMatch(/^tg:903: state unreadable: WRONGTYPE/m);
    } finally {
      await redis.del(...["tg:901", "tg:902", "tg:903"].map((sessionKey) => sessionKeys(config.REDIS_PREFIX, sessionKey).state));
    }
    expect((await admin("sessions")).code).toBe(0);
  });
});
