/**
 * Scheduled items follow access: the operator's `pairing revoke` removes what the user set in
 * private chats, and an item whose chat is no longer served is dropped when it fires, silently.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AccessControl, accessListsFrom } from "../../../src/gateway/access.js";
import { createRedis } from "../../../src/queue/index.js";
import { ScheduleStore } from "../../../src/schedule/index.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { spawnApp } from "../../helpers/app-process.js";
import { testConfig, testEnv } from "../../helpers/config.js";
import { captureLogs, startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { remindMePlan, schedulingModel } from "../../helpers/schedule.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("scheduled items and access", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let env: Record<string, string>;
  let telegram: RecordingAdapter;

  beforeEach(async () => {
    telegram = new RecordingAdapter("telegram");
    llm = await startFakeLlm();
    llm.setHandler(schedulingModel(remindMePlan));
    env = testEnv({ LLM_BASE_URL: llm.url, ALLOWED_TELEGRAM_CHATS: "-100500" });
    pipeline = await startPipeline(testConfig(env), [telegram], { logs: captureLogs("info") });
  });
  afterEach(async () => {
    await pipeline.close();
    await llm.close();
  });

  const dm = (text: string) => inbound({ platform: "telegram", chatId: "222", sessionKey: "tg:222", userId: "222", userName: "Pat", text });
  const inGroup = (text: string) => inbound({ platform: "telegram", chatId: "-100500", sessionKey: "tg:-100500", userId: "222", userName: "Pat", chatType: "group", text });

  async function withAccess<T>(use: (access: AccessControl, schedule: ScheduleStore) => Promise<T>): Promise<T> {
    const redis = createRedis(env.REDIS_URL!);
    try {
      return await use(new AccessControl(redis, env.REDIS_PREFIX!, accessListsFrom(testConfig(env))), new ScheduleStore(redis, env.REDIS_PREFIX!));
    } finally {
      redis.disconnect();
    }
  }

  async function approvePat(): Promise<void> {
    const denied = await telegram.submit(dm("hello"));
    const code = /pairing code is ([A-Z0-9]{8})/.exec("notice" in denied ? denied.notice ?? "" : "")?.[1];
    const cli = spawnApp(env, { entry: "src/cli/pairing.ts", args: ["approve", code ?? ""] });
    expect(await cli.exited()).toBe(0);
  }

  it("pairing revoke cancels what the user set in their private chat, not in groups", async () => {
    await approvePat();
    await telegram.submit(dm("remind me in 3h to water the plants"));
    await telegram.submit(inGroup("remind me in 3h to book the room"));
    await telegram.waitFor((sent) => sent.filter((entry) => entry.reply.text.startsWith("Done. Scheduled")).length === 2);

    const cli = spawnApp(env, { entry: "src/cli/pairing.ts", args: ["revoke", "telegram", "222"] });
    expect(await cli.exited()).toBe(0);
    expect(cli.stdout()).toBe("Revoked telegram user 222.\nCancelled 1 reminder(s) and scheduled task(s) of their private chat.\n");
    const left = await withAccess(async (_access, schedule) => schedule.getMany(await schedule.allIds()));
    expect(left.map((item) => item.text)).toEqual(["book the room"]);
  });

  it("an item whose chat is no longer served is dropped when it fires, and nothing is sent", async () => {
    await approvePat();
    await telegram.submit(dm("remind me in 2s to call mum"));
    await telegram.waitFor((sent) => sent.length === 1);
    // Access goes away without anyone touching the item (e.g. the operator changed the config).
    await withAccess((access) => access.revoke("telegram", "222"));
    await vi.waitFor(() => expect(pipeline.logs.lines.join("")).toContain("schedule-chat-removed"), { timeout: 30_000, interval: 50 });
    expect(await withAccess((_access, schedule) => schedule.allIds())).toEqual([]);
    await sleep(1_000);
    expect(telegram.sent.map((entry) => entry.reply.text)).toEqual([expect.stringMatching(/^Done\. Scheduled r1/)]);
  });
});
