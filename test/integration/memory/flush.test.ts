import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpError, startFakeLlm, textOf, type FakeLlm } from "../../fakes/fake-llm.js";
import { isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { testConfig } from "../../helpers/config.js";
import { isFlush, memoryModel, requestText } from "../../helpers/memory.js";
import { captureLogs, startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import type { InboundMessage } from "../../../src/core/channel.js";

const DM = { chatId: "dm-cy", sessionKey: "console:dm-cy", chatType: "private" as const, userId: "cy", userName: "Cy" };
const GROUP = { chatId: "club", sessionKey: "console:club", chatType: "group" as const, userId: "cy", userName: "Cy" };
const FACT = "locker number is 4417";

describe("memory flush before compaction, and the compaction notice", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  let count = 0;
  const say = async (where: Partial<InboundMessage>, text: string) => {
    const before = adapter.sent.length;
    const reply = await adapter.ask(inbound({ ...where, text, messageId: `f${++count}` }));
    expect(adapter.sent).toHaveLength(before + 1);
    return reply;
  };
  /** Talks until a compaction happened (a summarizer request arrived); → the replies. */
  const talkUntilCompacted = async (where: Partial<InboundMessage>) => {
    const summaries = llm.requests.filter(isSummarizerRequest).length;
    const replies: string[] = [];
    for (let turn = 1; turn <= 20 && llm.requests.filter(isSummarizerRequest).length === summaries; turn++) {
      replies.push(await say(where, `topic ${turn}: ${"a long story about the gym, the pool and the sauna ".repeat(40)}`));
    }
    expect(llm.requests.filter(isSummarizerRequest).length).toBeGreaterThan(summaries);
    return replies;
  };

  beforeAll(async () => {
    llm = await startFakeLlm();
    // The summarizer drops the planted fact: only the flush can keep it.
    llm.route(isSummarizerRequest, { text: "## Goal\nChat about the gym." });
    llm.setHandler((request) => {
      if (isFlush(request)) {
        return requestText(request).includes(`my ${FACT}`)
          ? { toolCalls: [{ name: "memory", arguments: { action: "add", text: FACT } }] }
          : { text: "NO_REPLY" };
      }
      return memoryModel(request);
    });
    pipeline = await startPipeline(testConfig({ LLM_BASE_URL: llm.url, LLM_CONTEXT_WINDOW: "8000" }), [adapter]);
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });

  it("a planted fact the summary drops is saved by the flush, silently, and is in the context after the compaction and after /new", async () => {
    // The opening exchange stays in the head through the first compaction; the fact comes next.
    await say(DM, "hello");
    await say(DM, `by the way, my ${FACT}`);
    const replies = await talkUntilCompacted(DM);
    const flushes = llm.requests.filter(isFlush);
    expect(flushes).toHaveLength(1);
    // Bounded, with the turn's own tools (the cached prefix holds; only memory calls are run), and never shown to the user.
    expect(flushes[0]!.body.max_tokens).toBe(512);
    const turnRequest = llm.requests.filter((request) => !isSummarizerRequest(request) && !isFlush(request)).at(-1)!;
    const names = (request: typeof turnRequest): string[] =>
      (request.body.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name);
    expect(names(flushes[0]!)).toEqual(names(turnRequest));
    expect(names(flushes[0]!)).toContain("memory");
    expect(adapter.sent.some((sent) => /NO_REPLY|Saved \[/.test(sent.reply.text))).toBe(false);

    // COMPACTION_NOTICE defaults to brief in a DM: one line, never the summary.
    expect(replies.at(-1)).toMatch(/^🧹 compacted \d+ older messages into a summary — \/context for details\n\nok$/);
    expect(replies.at(-1)).not.toContain("Chat about the gym");

    await say(DM, "what is my locker number?");
    const after = llm.requests.filter((request) => !isSummarizerRequest(request) && !isFlush(request)).at(-1)!;
    const [system, ...rest] = after.body.messages;
    expect(textOf(system!.content)).toContain(`] ${FACT}`);
    expect(rest.map((message) => textOf(message.content)).join("\n")).not.toContain("4417");

    await say(DM, "/new");
    await say(DM, "and now?");
    expect(textOf(llm.requests.at(-1)!.body.messages[0]!.content)).toContain(`] ${FACT}`);
  });

  it("no compaction notice in a group by default", async () => {
    const replies = await talkUntilCompacted(GROUP);
    expect(replies.every((reply) => reply === "ok")).toBe(true);
  });
});

describe("a flush that fails", () => {
  it("is logged and the compaction goes on: the turn is answered", async () => {
    const llm = await startFakeLlm();
    llm.route(isSummarizerRequest, { text: "## Goal\nChat." });
    llm.setHandler((request) => (isFlush(request) ? httpError.badRequest("flush refused") : { text: "ok" }));
    const adapter = new RecordingAdapter("console");
    const logs = captureLogs("warn");
    const pipeline = await startPipeline(testConfig({ LLM_BASE_URL: llm.url, LLM_CONTEXT_WINDOW: "8000", COMPACTION_NOTICE: "off" }), [adapter], { logs });
    try {
      for (let turn = 1; turn <= 20 && !llm.requests.some(isSummarizerRequest); turn++) {
        await adapter.submit(inbound({ ...DM, text: `topic ${turn}: ${"the pool and the sauna ".repeat(90)}`, messageId: `x${turn}` }));
        await adapter.waitFor((sent) => sent.length === turn);
      }
      expect(llm.requests.some(isFlush)).toBe(true);
      expect(llm.requests.some(isSummarizerRequest)).toBe(true);
      expect(adapter.sent.every((sent) => sent.reply.text === "ok")).toBe(true);
      expect(logs.lines.some((line) => line.includes('"memory-flush-failed"'))).toBe(true);
    } finally {
      await pipeline.close();
      await llm.close();
    }
  });
});
