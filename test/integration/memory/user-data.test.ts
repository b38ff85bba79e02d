import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, withoutStamp, type FakeLlm } from "../../fakes/fake-llm.js";
import { spawnApp } from "../../helpers/app-process.js";
import { testConfig, testEnv } from "../../helpers/config.js";
import { memoryModel } from "../../helpers/memory.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { createRedis } from "../../../src/queue/index.js";
import { exportUserData } from "../../../src/memory/index.js";
import type { InboundMessage } from "../../../src/core/channel.js";
import type { Redis } from "ioredis";

const DEE = { chatId: "dm-dee", sessionKey: "console:dm-dee", chatType: "private" as const, userId: "dee", userName: "Dee" };
const EVE = { chatId: "dm-eve", sessionKey: "console:dm-eve", chatType: "private" as const, userId: "eve", userName: "Eve" };
const HALL = { chatId: "hall", sessionKey: "console:hall", chatType: "group" as const, userId: "dee", userName: "Dee" };

/** Every key under the prefix, by SCAN (never KEYS), with its value when it is a string or a list. */
async function scanEverything(redis: Redis, prefix: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 200);
    cursor = next;
    for (const key of batch) {
      const type = await redis.type(key);
      const value = type === "string" ? await redis.get(key) : type === "list" ? (await redis.lrange(key, 0, -1)).join("\n") : type === "hash" ? JSON.stringify(await redis.hgetall(key)) : "";
      found.set(key, value ?? "");
    }
  } while (cursor !== "0");
  return found;
}

describe("data rights: export and delete-user", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let redis: Redis;
  const env = testEnv({ LLM_API_KEY: "sk-test" });
  const adapter = new RecordingAdapter("console");
  let count = 0;
  const say = (where: Partial<InboundMessage>, text: string) => adapter.ask(inbound({ ...where, text, messageId: `d${++count}` }));

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.setHandler(memoryModel);
    env.LLM_BASE_URL = llm.url;
    pipeline = await startPipeline(testConfig(env), [adapter]);
    redis = createRedis(env.REDIS_URL!);
    await say(DEE, "remember: the safe code is sesame-9");
    await say(DEE, "an old conversation");
    await say(DEE, "/new");
    await say(DEE, "a new conversation");
    await say(HALL, "/memory share");
    await say(HALL, "hi hall");
    await say(EVE, "remember: Eve plays the cello");
  });
  afterAll(async () => {
    redis.disconnect();
    await pipeline.close();
    await llm.close();
  });

  it("exports the user's memory and private conversations, archives included", async () => {
    const data = await exportUserData(redis, env.REDIS_PREFIX!, { platform: "console", userId: "dee" });
    expect(data.user).toBe("console:dee");
    expect(data.memory.facts.map((fact) => fact.text)).toEqual(["the safe code is sesame-9"]);
    expect(data.sessions.map((session) => session.sessionKey)).toEqual(["console:dm-dee"]);
    const [session] = data.sessions;
    expect(session!.transcript.map((message) => withoutStamp(message.content ?? ""))).toContain("a new conversation");
    expect(session!.archives).toHaveLength(1);
    expect(session!.archives[0]!.transcript.map((message) => withoutStamp(message.content ?? ""))).toContain("an old conversation");
  });

  it("npm run admin -- delete-user removes every key of that user (SCAN), and nothing of anyone else's", async () => {
    const prefix = env.REDIS_PREFIX!;
    const before = await scanEverything(redis, prefix);
    expect([...before.keys()].some((key) => key.includes("dm-dee"))).toBe(true);
    expect([...before.keys()].some((key) => key.includes("user:console:dee"))).toBe(true);
    const eveKeys = [...before.keys()].filter((key) => key.includes("eve"));
    expect(eveKeys.length).toBeGreaterThan(0);

    const cli = spawnApp(env, { entry: "src/cli/admin.ts", args: ["delete-user", "console:dee"] });
    expect(await cli.exited()).toBe(0);
    expect(cli.stdout()).toMatch(/^Deleted console:dee: 1 private conversation\(s\) \(console:dm-dee\), \d+ key\(s\), 0 reminder\(s\) or task\(s\)\.$/m);

    const after = await scanEverything(redis, prefix);
    expect([...after.keys()].filter((key) => key.includes("dee"))).toEqual([]);
    // Nothing kept holds their private memory, or their consent: the group's memory forgot it.
    expect([...after.entries()].filter(([, value]) => value.includes("sesame") || value.includes("console:dee"))).toEqual([]);
    // Eve's data and the group's conversation are untouched.
    for (const key of eveKeys) expect(after.has(key)).toBe(true);
    expect([...after.keys()].some((key) => key.startsWith(`${prefix}:{console:hall}:`))).toBe(true);
  });
});
