import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AccessControl, accessListsFrom } from "../../src/gateway/access.js";
import { createRedis } from "../../src/queue/index.js";
import { ScheduleStore } from "../../src/schedule/index.js";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { spawnApp } from "../helpers/app-process.js";
import { testConfig, testEnv } from "../helpers/config.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../helpers/recording-adapter.js";
import { remindMePlan, schedulingModel } from "../helpers/schedule.js";

describe("access control and pairing", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let env: Record<string, string>;
  let telegram: RecordingAdapter;

  beforeEach(async () => {
    telegram = new RecordingAdapter("telegram");
    llm = await startFakeLlm();
    env = testEnv({ LLM_BASE_URL: llm.url, ALLOWED_TELEGRAM_USERS: "111", ALLOWED_TELEGRAM_CHATS: "-100500" });
    pipeline = await startPipeline(testConfig(env), [telegram]);
  });
  afterEach(async () => {
    await pipeline.close();
    await llm.close();
  });

  const dm = (userId: string, text: string) =>
    inbound({ platform: "telegram", chatId: userId, sessionKey: `tg:${userId}`, userId, userName: `user${userId}`, text });

  it("lets an allowlisted user through", async () => {
    expect((await telegram.submit(dm("111", "hi"))).status).toBe("accepted");
    await telegram.waitFor((sent) => sent.length === 1);
    expect(telegram.sent[0]?.reply.text).toBe("echo: hi");
  });

  it("gives an unknown user a pairing code, lets nothing reach the agent, and admits them after CLI approval", async () => {
    const first = await telegram.submit(dm("222", "let me in"));
    expect(first.status).toBe("denied");
    const notice = "notice" in first ? first.notice ?? "" : "";
    const code = /pairing code is ([A-Z0-9]{8})/.exec(notice)?.[1];
    expect(code).toBeDefined();
    expect(notice).toContain(`npm run pairing -- approve ${code}`);

    // A second message within minutes does not spam a new code.
    const second = await telegram.submit(dm("222", "hello?"));
    expect(second).toEqual({ status: "denied" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(llm.requests).toHaveLength(0);

    // The operator finds the request in `pairing list` (SCAN over the codes).
    const list = spawnApp(env, { entry: "src/cli/pairing.ts", args: ["list"] });
    expect(await list.exited()).toBe(0);
    expect(list.stdout()).toContain(`${code}  telegram user 222 (user222)`);

    const cli = spawnApp(env, { entry: "src/cli/pairing.ts", args: ["approve", code!.toLowerCase()] });
    expect(await cli.exited()).toBe(0);
    expect(cli.stdout()).toContain("Approved user222 (telegram user 222)");

    expect((await telegram.submit(dm("222", "now?"))).status).toBe("accepted");
    await telegram.waitFor((sent) => sent.length === 1);
    expect(telegram.sent[0]?.reply.text).toBe("echo: now?");
    // Only the approved message reached the agent: the denied ones were never stored.
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]?.body.messages.filter((message) => message.role === "user")).toHaveLength(1);

    const reuse = spawnApp(env, { entry: "src/cli/pairing.ts", args: ["approve", code!] });
    expect(await reuse.exited()).toBe(1);
  });

  it("serves only groups allowed explicitly, names the speaker, and stays silent elsewhere", async () => {
    const group = (chatId: string, text: string) =>
      inbound({ platform: "telegram", chatId, sessionKey: `tg:${chatId}`, userId: "999", userName: "Grace", chatType: "group", text });
    expect(await telegram.submit(group("-100777", "hello"))).toEqual({ status: "denied" });
    expect((await telegram.submit(group("-100500", "hello all"))).status).toBe("accepted");
    await telegram.waitFor((sent) => sent.length === 1);
    expect(telegram.sent[0]?.reply.text).toBe("echo: Grace: hello all");
  });

  const pat = (text: string, chatType: "private" | "group" = "private") => {
    const chatId = chatType === "private" ? "222" : "-100500";
    return inbound({ platform: "telegram", chatId, sessionKey: `tg:${chatId}`, userId: "222", userName: "Pat", chatType, text });
  };
  const scheduled = async () => {
    const redis = createRedis(env.REDIS_URL!);
    try {
      const store = new ScheduleStore(redis, env.REDIS_PREFIX!);
      return (await store.getMany(await store.allIds())).map((item) => item.text);
    } finally {
      redis.disconnect();
    }
  };
  async function approvePat(): Promise<void> {
    llm.setHandler(schedulingModel(remindMePlan));
    const denied = await telegram.submit(pat("hello"));
    const code = /pairing code is ([A-Z0-9]{8})/.exec("notice" in denied ? denied.notice ?? "" : "")?.[1];
    expect(await spawnApp(env, { entry: "src/cli/pairing.ts", args: ["approve", code ?? ""] }).exited()).toBe(0);
  }

  it("pairing revoke cancels what the user set in their private chat, not in groups", async () => {
    await approvePat();
    await telegram.submit(pat("remind me in 3h to water the plants"));
    await telegram.submit(pat("remind me in 3h to book the room", "group"));
    await telegram.waitFor((sent) => sent.filter((entry) => entry.reply.text.startsWith("Done. Scheduled")).length === 2);

    const cli = spawnApp(env, { entry: "src/cli/pairing.ts", args: ["revoke", "telegram", "222"] });
    expect(await cli.exited()).toBe(0);
    expect(cli.stdout()).toBe("Revoked telegram user 222.\nCancelled 1 reminder(s) and scheduled task(s) of their private chat.\n");
    expect(await scheduled()).toEqual(["book the room"]);
  });

  it("an item whose chat is no longer served is dropped when it fires, and nothing is sent", async () => {
    await approvePat();
    await telegram.submit(pat("remind me in 2s to call mum"));
    await telegram.waitFor((sent) => sent.length === 1);
    // Access goes away without anyone touching the item (e.g. the operator changed the config).
    const redis = createRedis(env.REDIS_URL!);
    await new AccessControl(redis, env.REDIS_PREFIX!, accessListsFrom(testConfig(env))).revoke("telegram", "222");
    redis.disconnect();
    await vi.waitFor(async () => expect(await scheduled()).toEqual([]), { timeout: 30_000, interval: 50 });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(telegram.sent.map((entry) => entry.reply.text)).toEqual([expect.stringMatching(/^Done\. Scheduled r1/)]);
  });
});

describe("duplicates", () => {
  it("answers the same platform message id once", async () => {
    const llm = await startFakeLlm();
    const adapter = new RecordingAdapter("console");
    const pipeline = await startPipeline(testConfig({ LLM_BASE_URL: llm.url }), [adapter]);
    try {
      const message = inbound({ text: "only once", messageId: "platform-42" });
      expect((await adapter.submit(message)).status).toBe("accepted");
      expect((await adapter.submit({ ...message })).status).toBe("duplicate");
      await adapter.waitFor((sent) => sent.length === 1);
      expect((await adapter.submit({ ...message })).status).toBe("duplicate");
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(adapter.sent).toHaveLength(1);
      expect(llm.requests).toHaveLength(1);
    } finally {
      await pipeline.close();
      await llm.close();
    }
  });
});
