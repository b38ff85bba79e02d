/**
 * MCP tools through the whole pipeline: the fake LLM scripts the tool calls, real MCP servers
 * answer them (server-everything, server-filesystem), and the gateway, queue, worker and
 * delivery around a RecordingAdapter are the real ones. Per-chat access, output caps with
 * recall paging, cancellation by /stop, a server killed mid-turn.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createRedis } from "../../src/queue/index.js";
import { SessionStore } from "../../src/session/store.js";
import { imagePartsOf, startFakeLlm, textOf, type FakeLlm, type RecordedRequest } from "../fakes/fake-llm.js";
import { testConfig } from "../helpers/config.js";
import { EVERYTHING, FILESYSTEM, assertCallsAnswered, writeConfigFile } from "../helpers/mcp.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { RecordingAdapter, inbound } from "../helpers/recording-adapter.js";
import { warmUpTokenizer } from "../helpers/telegram-pipeline.js";

const GROUP = "-100777";
const OPEN_GROUP = "-100888";
const ADA = "42";
const BOB = "43";

const toolNames = (request: RecordedRequest | undefined) =>
  ((request?.body.tools ?? []) as Array<{ function: { name: string } }>).map((tool) => tool.function.name);

const toolResults = (request: RecordedRequest | undefined) =>
  (request?.body.messages ?? []).filter((message) => message.role === "tool").map((message) => textOf(message.content));

describe("MCP tools through the pipeline", () => {
  let llm: FakeLlm;
  let adapter: RecordingAdapter;
  let pipeline: Pipeline;
  let root: string;
  let env: Record<string, string>;
  let config: ReturnType<typeof testConfig>;

  beforeAll(async () => {
    warmUpTokenizer();
    llm = await startFakeLlm();
    root = mkdtempSync(join(tmpdir(), "lh-e2e-files-"));
    writeFileSync(join(root, "readme.txt"), "project notes");
    const file = writeConfigFile({
      mcp: {
        servers: {
          every: { command: process.execPath, args: [EVERYTHING, "stdio"], timeout_ms: 60_000 },
          files: { command: process.execPath, args: [FILESYSTEM, root], tools: { include: ["read_*", "list_*"] } },
        },
      },
      access: { tools: { default: ["every"], chats: { [`tg:${OPEN_GROUP}`]: ["files"] } } },
    });
    env = {
      LLM_BASE_URL: llm.url,
      LONGHAUL_CONFIG_FILE: file,
      ALLOWED_TELEGRAM_USERS: `${ADA},${BOB}`,
      ALLOWED_TELEGRAM_CHATS: `${GROUP},${OPEN_GROUP}`,
      TOOL_OUTPUT_MAX_CHARS: "1000",
    };
    adapter = new RecordingAdapter("telegram");
    config = testConfig(env);
    pipeline = await startPipeline(config, [adapter]);
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });
  afterEach(() => {
    llm.setHandler((request) => ({ text: `echo: ${textOf(request.body.messages.findLast((message) => message.role === "user")?.content)}` }));
  });

  const send = (text: string, chat: { chatId: string; group?: boolean; userId?: string } = { chatId: ADA }) =>
    adapter.submit(inbound({
      platform: "telegram", text, chatId: chat.chatId, sessionKey: `tg:${chat.chatId}`,
      chatType: chat.group ? "group" : "private", userId: chat.userId ?? ADA, userName: chat.userId === BOB ? "Bob" : "Ada",
    }));
  const replies = (chatId: string) => adapter.sent.filter((entry) => entry.reply.target.chatId === chatId).map((entry) => entry.reply);
  const waitForReplies = (chatId: string, count: number) => adapter.waitFor(() => replies(chatId).length >= count, 60_000);

  it("runs tools the model calls (echo, sum, image, structured content, an error) and answers; the tool's picture reaches the model as an image part", async () => {
    const chat = "1001";
    const before = llm.requests.length;
    llm.setHandler((request) => {
      if (request.body.messages.some((message) => message.role === "tool")) return { text: `results: ${toolResults(request).join(" | ")}` };
      return {
        toolCalls: [
          { name: "every__echo", arguments: { message: "ping" } },
          { name: "every__get-sum", arguments: { a: 20, b: 22 } },
          { name: "every__get-tiny-image" },
          { name: "every__get-structured-content", arguments: { location: "New York" } },
          { name: "every__get-sum", arguments: { a: "x" } },
        ],
      };
    });
    await send("use your tools", { chatId: chat });
    await waitForReplies(chat, 1);
    const [first, second] = llm.requests.slice(before);
    expect(toolNames(first)).toEqual([...toolNames(first)].sort());
    expect(toolNames(first)).toEqual(expect.arrayContaining(["current_time", "recall", "every__echo", "every__get-sum"]));
    expect(toolNames(first).some((name) => name.startsWith("files__"))).toBe(false);
    const results = toolResults(second);
    expect(results[0]).toBe("Echo: ping");
    expect(results[1]).toBe("The sum of 20 and 22 is 42.");
    expect(results[2]).toMatch(/\[image 1: image\/png, [\d.]+ KB\]/);
    // The picture follows the tool results as a user message (the API takes images there only).
    expect(second?.body.messages.at(-1)?.role).toBe("user");
    expect(imagePartsOf(second!)).toEqual([{ url: expect.stringMatching(/^data:image\/png;base64,/), detail: "auto" }]);
    expect(JSON.parse(results[3]!)).toEqual({ temperature: 33, conditions: "Cloudy", humidity: 82 });
    expect(results[4]).toMatch(/^Error from every__get-sum: /);
    for (const request of llm.requests.slice(before)) assertCallsAnswered(request);
    expect(replies(chat)[0]?.text).toMatch(/^results: Echo: ping/);
  });

  it("offers a server only in the chats access.tools allows; /tools lists what this chat can use", async () => {
    const before = llm.requests.length;
    await send("hello", { chatId: GROUP, group: true });
    await waitForReplies(GROUP, 1);
    expect(toolNames(llm.requests[before]).some((name) => name.startsWith("files__"))).toBe(false);

    await send("hello", { chatId: OPEN_GROUP, group: true });
    await waitForReplies(OPEN_GROUP, 1);
    const offered = toolNames(llm.requests.at(-1));
    expect(offered).toEqual(expect.arrayContaining(["files__read_text_file", "files__list_directory", "every__echo"]));
    expect(offered.some((name) => name.startsWith("files__write"))).toBe(false);

    await send("/tools", { chatId: GROUP, group: true });
    await waitForReplies(GROUP, 2);
    const listing = replies(GROUP)[1]!.text;
    expect(listing).toContain("every (MCP server)");
    expect(listing).toContain("every__echo");
    expect(listing).not.toContain("files");
  });

  it("reads a file inside the server's root; a path outside is an error result the model reads", async () => {
    const before = llm.requests.length;
    llm.setHandler((request) => request.body.messages.at(-1)?.role === "tool"
      ? { text: toolResults(request).join(" | ") }
      : { toolCalls: [{ name: "files__read_text_file", arguments: { path: join(root, "readme.txt") } }, { name: "files__read_text_file", arguments: { path: "/etc/passwd" } }] });
    await send("read the files", { chatId: OPEN_GROUP, group: true });
    await waitForReplies(OPEN_GROUP, 2);
    const results = toolResults(llm.requests.at(-1));
    expect(llm.requests.length - before).toBe(2);
    expect(results[0]).toBe("project notes");
    expect(results[1]).toMatch(/^Error from files__read_text_file: .*(denied|outside)/i);
  });

  it("caps a long output: the model sees a preview, recall pages through the original, the transcript stays small", async () => {
    const chat = "1002";
    const long = Array.from({ length: 400 }, (_, index) => `line ${String(index).padStart(3, "0")}`).join("\n");
    let step = 0;
    llm.setHandler((request) => {
      step++;
      if (step === 1) return { toolCalls: [{ name: "every__echo", arguments: { message: long } }] };
      if (step === 2) {
        const preview = toolResults(request)[0]!;
        const reference = /recall with id "(m\d+)" and offset (\d+)/.exec(preview);
        return { toolCalls: [{ name: "recall", arguments: { id: reference?.[1], offset: Number(reference?.[2]), length: 60 } }] };
      }
      return { text: "paged" };
    });
    await send("echo a lot", { chatId: chat });
    await waitForReplies(chat, 1);
    const [capped, page] = toolResults(llm.requests.at(-1));
    expect(capped!.length).toBeLessThanOrEqual(1000);
    expect(capped).toMatch(/^Echo: line 000\nline 001/);
    const original = `Echo: ${long}`;
    expect(capped).toContain(`[output cut: the first `);
    expect(capped).toContain(` of ${original.length} characters are shown`);
    const shown = Number(/the first (\d+) of/.exec(capped!)?.[1]);
    expect(capped!.startsWith(original.slice(0, shown))).toBe(true);
    expect(page).toContain(original.slice(shown, shown + 60));
    expect(page).toContain(`characters ${shown}–${shown + 60} of ${original.length}`);

    const redis = createRedis(config.REDIS_URL!);
    try {
      const transcript = await new SessionStore(redis, config.REDIS_PREFIX).readTranscript(`tg:${chat}`);
      const tool = transcript.find((message) => message.role === "tool")!;
      expect(tool.content.length).toBeLessThanOrEqual(1000);
      expect(transcript.some((message) => (message.content ?? "").includes("line 399"))).toBe(false);
    } finally {
      redis.disconnect();
    }
  });

  it("/stop cancels a long-running tool call", async () => {
    const chat = "1003";
    llm.setHandler(() => ({ toolCalls: [{ name: "every__trigger-long-running-operation", arguments: { duration: 600, steps: 2 } }] }));
    const before = llm.requests.length;
    await send("run the long thing", { chatId: chat });
    await llm.waitForRequests(before + 1, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await send("/stop", { chatId: chat });
    await waitForReplies(chat, 1);
    expect(replies(chat).map((reply) => reply.text)).toEqual(["Stopped."]);
    expect(llm.requests.length).toBe(before + 1);
  });
});
