/**
 * Approval of tool calls through the pipeline: the request goes out with buttons, the answer
 * comes back as a button press through the ingress, and the tool loop goes on. Approved,
 * denied, timed out, answered by someone who may not, superseded by a new message. No LLM
 * request ever carries a tool call without its result.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { OutboundReply } from "../../src/core/channel.js";
import { startFakeLlm, textOf, type FakeLlm, type RecordedRequest } from "../fakes/fake-llm.js";
import { testConfig } from "../helpers/config.js";
import { FILESYSTEM, assertCallsAnswered, writeConfigFile } from "../helpers/mcp.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { RecordingAdapter, inbound } from "../helpers/recording-adapter.js";
import { warmUpTokenizer } from "../helpers/telegram-pipeline.js";

const GROUP = "-100555";
const ADA = "42";
const BOB = "43";
const ADMIN = "44";

const toolResults = (request: RecordedRequest | undefined) =>
  (request?.body.messages ?? []).filter((message) => message.role === "tool").map((message) => textOf(message.content));

/** The results of the latest step (the tool messages after the last assistant message). */
const stepResults = (request: RecordedRequest) => {
  const messages = request.body.messages;
  const last = messages.findLastIndex((message) => message.role === "assistant");
  return messages.slice(last + 1).filter((message) => message.role === "tool").map((message) => textOf(message.content));
};

describe("review 30: a second press on an answered approval", () => {
  let llm: FakeLlm;
  let adapter: RecordingAdapter;
  let pipeline: Pipeline;
  let root: string;

  beforeAll(async () => {
    warmUpTokenizer();
    llm = await startFakeLlm();
    root = mkdtempSync(join(tmpdir(), "lh-approval-"));
    const file = writeConfigFile({
      mcp: { servers: { files: { command: process.execPath, args: [FILESYSTEM, root], approval: { tools: ["write_file"] } } } },
    });
    adapter = new RecordingAdapter("telegram");
    pipeline = await startPipeline(testConfig({
      LLM_BASE_URL: llm.url,
      LONGHAUL_CONFIG_FILE: file,
      ALLOWED_TELEGRAM_CHATS: GROUP,
      ALLOWED_TELEGRAM_USERS: ADA,
      ADMIN_TELEGRAM_USERS: ADMIN,
      APPROVAL_TIMEOUT_S: "2",
    }), [adapter]);
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });
  afterEach(() => {
    for (const request of llm.requests) assertCallsAnswered(request);
  });

  let chatCounter = 0;
  /** A script: the first request writes `name`, later ones answer with what the tools said. */
  function scriptWrite(name: string) {
    llm.setHandler((request) => {
      if (request.body.messages.at(-1)?.role === "tool") return { text: `tool said: ${stepResults(request)[0]}` };
      return { toolCalls: [{ name: "files__write_file", arguments: { path: join(root, name), content: `written by ${name}` } }, { name: "current_time" }] };
    });
  }

  const say = (chatId: string, userId: string, text: string) => adapter.submit(inbound({
    platform: "telegram", text, chatId, sessionKey: `tg:${chatId}`, chatType: chatId.startsWith("-") ? "group" : "private",
    userId, userName: userId === ADA ? "Ada" : userId === BOB ? "Bob" : "Root",
  }));
  const press = (chatId: string, userId: string, actionId: string, sourceMessageId = "900") => adapter.submit(inbound({
    platform: "telegram", text: "(button)", chatId, sessionKey: `tg:${chatId}`, chatType: chatId.startsWith("-") ? "group" : "private",
    userId, userName: userId === ADA ? "Ada" : userId === BOB ? "Bob" : "Root", action: { id: actionId, sourceMessageId },
  }));
  const repliesTo = (chatId: string): OutboundReply[] => adapter.sent.filter((entry) => entry.reply.target.chatId === chatId).map((entry) => entry.reply);
  const waitReplies = async (chatId: string, count: number) => {
    await adapter.waitFor(() => repliesTo(chatId).length >= count, 60_000);
    return repliesTo(chatId);
  };

  async function requestApproval(chatId: string, userId: string, name: string) {
    scriptWrite(name);
    await say(chatId, userId, `please write ${name}`);
    const [request] = await waitReplies(chatId, 1);
    expect(request?.actions?.map((action) => action.label)).toEqual(["Approve", "Deny"]);
    expect(request?.text).toContain("`write_file` on server `files`");
    expect(request?.text).toContain(`"path": ${JSON.stringify(join(root, name))}`);
    return request!;
  }

  it("the asker presses Approve twice (a double tap): the approval message keeps its outcome", async () => {
    const chat = String(1000 + ++chatCounter);
    const request = await requestApproval(chat, ADA, "twice.txt");
    // Both presses on the same approval message (id 777), the second before the first's edit took the buttons away.
    await press(chat, ADA, request.actions![0]!.id, "777");
    await press(chat, ADA, request.actions![0]!.id, "777");
    const replies = await waitReplies(chat, 4);
    const edits = replies.filter((reply) => reply.replaces === "777").map((reply) => reply.text);
    expect(edits[0]).toBe("✅ Approved by Ada: ran `files__write_file`.");
    // The last edit of message 777 is what the chat shows: it must still say who approved.
    expect(edits.at(-1)).toBe("✅ Approved by Ada: ran `files__write_file`.");
    expect(replies.at(-1)).toMatchObject({ text: "This request was already answered.", private: true });
  });

  it("a stranger's stale press on an answered approval is not shown to the group", async () => {
    const request = await requestApproval(GROUP, ADA, "stale.txt");
    await press(GROUP, ADA, request.actions![0]!.id, "778");
    await waitReplies(GROUP, 3);
    await press(GROUP, BOB, request.actions![1]!.id, "778");
    const replies = await waitReplies(GROUP, 4);
    const last = replies.at(-1)!;
    // Bob's press is for Bob alone, and the group's message keeps the outcome.
    expect(last).toMatchObject({ text: "This request was already answered.", private: true });
    expect(last.replaces).toBeUndefined();
  });
});
