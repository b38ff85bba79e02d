import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, textOf, type FakeLlm, type RecordedRequest } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { memoryModel, requestText } from "../../helpers/memory.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import type { InboundMessage } from "../../../src/core/channel.js";
import type { Config } from "../../../config/index.js";

const DM = { chatId: "dm-ada", sessionKey: "console:dm-ada", chatType: "private" as const, userId: "ada", userName: "Ada" };
const DM2 = { chatId: "dm-ada-2", sessionKey: "console:dm-ada-2", chatType: "private" as const, userId: "ada", userName: "Ada" };
const GROUP = { chatId: "team", sessionKey: "console:team", chatType: "group" as const, userId: "ada", userName: "Ada" };
const OTHER_GROUP = { chatId: "other", sessionKey: "console:other", chatType: "group" as const, userId: "ada", userName: "Ada" };

describe("long-term memory: user and chat scopes", () => {
  let llm: FakeLlm;
  let config: Config;
  let pipeline: Pipeline;
  let adapter: RecordingAdapter;
  let count = 0;
  const say = (where: Partial<InboundMessage>, text: string) => adapter.ask(inbound({ ...where, text, messageId: `m${++count}` }));
  /** The main-model requests one `say` produced. */
  const requestsOf = async (where: Partial<InboundMessage>, text: string): Promise<RecordedRequest[]> => {
    const before = llm.requests.length;
    await say(where, text);
    return llm.requests.slice(before);
  };

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.setHandler(memoryModel);
    config = testConfig({ LLM_BASE_URL: llm.url, LLM_CONTEXT_WINDOW: "128000" });
    adapter = new RecordingAdapter("console");
    pipeline = await startPipeline(config, [adapter]);
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });

  it("a fact saved in a DM: the tool confirms it, and it is in the context after /new", async () => {
    const requests = await requestsOf(DM, "remember: my favourite colour is teal");
    const toolAnswer = textOf(requests.at(-1)!.body.messages.at(-1)!.content);
    expect(toolAnswer).toMatch(/^Saved \[u1\] to the user's memory \(27\/2,000 characters\): "my favourite colour is teal"/);
    // Mid-session writes wait for the next snapshot: the prefix stays byte-stable.
    const same = await requestsOf(DM, "and now?");
    expect(textOf(same[0]!.body.messages[0]!.content)).not.toContain("teal");

    expect(await say(DM, "/new")).toMatch(/^Started a new conversation/);
    const fresh = await requestsOf(DM, "what do you know about me?");
    const system = textOf(fresh[0]!.body.messages[0]!.content);
    expect(system).toContain("[Long-term memory");
    expect(system).toContain("- [u1] my favourite colour is teal");
  });

  it("a user's memory never enters a group's requests, where the same user talks", async () => {
    const requests = [...await requestsOf(GROUP, "hello team"), ...await requestsOf(GROUP, "what's my favourite colour?")];
    expect(requests.length).toBeGreaterThan(0);
    for (const request of requests) expect(requestText(request)).not.toContain("teal");
  });

  it("chat memory stays in its chat", async () => {
    await say(GROUP, "remember: the deploy day is Thursday");
    const elsewhere = [...await requestsOf(OTHER_GROUP, "hi"), ...await requestsOf(DM, "hi")];
    for (const request of elsewhere) expect(requestText(request)).not.toContain("Thursday");
    await say(GROUP, "/new");
    const [request] = await requestsOf(GROUP, "when do we deploy?");
    expect(textOf(request!.body.messages[0]!.content)).toContain("- [c1] the deploy day is Thursday");
    expect(requestText(request!)).not.toContain("teal");
  });

  it("after a restart a new session of the same user starts with the memory", async () => {
    await pipeline.close();
    adapter = new RecordingAdapter("console");
    pipeline = await startPipeline(config, [adapter]);
    const [request] = await requestsOf(DM2, "hello again");
    expect(textOf(request!.body.messages[0]!.content)).toContain("- [u1] my favourite colour is teal");
    expect(requestText(request!)).not.toContain("Thursday");
  });

  it("every request, whatever its chat, kept each scope where it belongs", () => {
    for (const request of llm.requests) {
      const text = requestText(request);
      const group = text.includes("Ada: ");
      if (group) expect(text).not.toContain("teal");
    }
  });
});
