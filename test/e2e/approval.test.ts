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
import { sleep, warmUpTokenizer } from "../helpers/telegram-pipeline.js";

const GROUP = "-100555";
/** A second group, for the stale-press test: its replies are counted apart from GROUP's. */
const OTHER_GROUP = "-100556";
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

describe("tool approval", () => {
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
      ALLOWED_TELEGRAM_CHATS: `${GROUP},${OTHER_GROUP}`,
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

  it("approved: the call runs, the request is replaced by the outcome, and the loop goes on to an answer", async () => {
    const chat = String(1000 + ++chatCounter);
    const request = await requestApproval(chat, ADA, "approved.txt");
    const waitingRequests = llm.requests.length;
    expect(existsSync(join(root, "approved.txt"))).toBe(false);

    await press(chat, ADA, request.actions![0]!.id, "777");
    const replies = await waitReplies(chat, 3);
    expect(replies[1]).toMatchObject({ kind: "notice", replaces: "777", text: "✅ Approved by Ada: ran `files__write_file`." });
    expect(replies[2]?.kind).toBe("answer");
    expect(replies[2]?.text).toMatch(/^tool said: /);
    expect(readFileSync(join(root, "approved.txt"), "utf8")).toBe("written by approved.txt");
    // The current_time call ran beside the waiting one and joined the context at once, as a step of
    // its own (bac6c61); the approved call's step follows it with its result.
    const resumed = llm.requests[waitingRequests]!;
    const results = toolResults(resumed);
    expect(results).toHaveLength(2);
    expect(results[0]).toMatch(/^UTC: /);
    expect(results[1]).toMatch(/Successfully wrote/);
    expect(resumed.body.messages.slice(-4).map((message) => message.role)).toEqual(["assistant", "tool", "assistant", "tool"]);
    expect(replies[2]?.target.replyToMessageId).toBe(request.target.replyToMessageId);
  });

  it("denied: nothing runs and the model reads that it was denied", async () => {
    const chat = String(1000 + ++chatCounter);
    const request = await requestApproval(chat, ADA, "denied.txt");
    await press(chat, ADA, request.actions![1]!.id);
    const replies = await waitReplies(chat, 3);
    expect(replies[1]?.text).toBe("🚫 Denied by Ada: `files__write_file` not run.");
    expect(replies[2]?.text).toBe("tool said: Error: not run — the user denied this call.");
    expect(existsSync(join(root, "denied.txt"))).toBe(false);
  });

  it("only the person who asked, or an admin, may answer", async () => {
    const request = await requestApproval(GROUP, ADA, "group.txt");
    // Refused by the ingress, for the adapter to show the presser alone; nothing is stored or sent.
    expect(await press(GROUP, BOB, request.actions![0]!.id)).toEqual({ status: "refused", notice: "Only Ada, who asked, or an admin can answer this request." });
    expect(existsSync(join(root, "group.txt"))).toBe(false);

    await press(GROUP, ADMIN, request.actions![0]!.id);
    let replies = await waitReplies(GROUP, 3);
    expect(replies[1]?.text).toBe("✅ Approved by Root: ran `files__write_file`.");
    expect(existsSync(join(root, "group.txt"))).toBe(true);

    // A second press on the answered request changes nothing: refused by the ingress, for the
    // presser alone; nothing is stored or sent, the outcome stays.
    expect(await press(GROUP, ADA, request.actions![1]!.id, "901")).toEqual({ status: "refused", notice: "This request was already answered." });
    await sleep(300);
    expect(repliesTo(GROUP)).toHaveLength(replies.length);
  });

  it("times out after APPROVAL_TIMEOUT_S: denied, and the model answers with that", async () => {
    const chat = String(1000 + ++chatCounter);
    await requestApproval(chat, ADA, "late.txt");
    const replies = await waitReplies(chat, 3);
    expect(replies[1]?.text).toBe("⌛ No answer within 2 s: `files__write_file` not run.");
    expect(replies[2]?.text).toBe("tool said: Error: not run — nobody approved this call within 2 s.");
    expect(existsSync(join(root, "late.txt"))).toBe(false);
  });

  it("a new message instead of an answer: the call is not run and the conversation goes on", async () => {
    const chat = String(1000 + ++chatCounter);
    const request = await requestApproval(chat, ADA, "superseded.txt");
    llm.setHandler((incoming) => ({ text: `saw: ${toolResults(incoming).join(" | ")} / ${textOf(incoming.body.messages.at(-1)?.content)}` }));
    const before = llm.requests.length;
    await say(chat, ADA, "never mind");
    const replies = await waitReplies(chat, 2);
    expect(replies[1]?.text).toContain("Error: not run — the user sent a new message instead of answering the approval request.");
    expect(replies[1]?.text).toMatch(/never mind$/);
    // Both steps joined the context before the new message: the call that ran beside the waiting
    // one with its result, then the waiting call with its "not run", then the user.
    const roles = llm.requests[before]!.body.messages.slice(-5).map((message) => message.role);
    expect(roles).toEqual(["assistant", "tool", "assistant", "tool", "user"]);
    await press(chat, ADA, request.actions![0]!.id, "902");
    expect((await waitReplies(chat, 3))[2]?.text).toBe("This request is no longer waiting for an answer.");
    expect(existsSync(join(root, "superseded.txt"))).toBe(false);
  });

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
    const request = await requestApproval(OTHER_GROUP, ADA, "stale.txt");
    await press(OTHER_GROUP, ADA, request.actions![0]!.id, "778");
    await waitReplies(OTHER_GROUP, 3);
    // Bob's press is for Bob alone (refused by the ingress), and the group's message keeps the outcome.
    expect(await press(OTHER_GROUP, BOB, request.actions![1]!.id, "778")).toEqual({ status: "refused", notice: "This request was already answered." });
    await sleep(300);
    expect(repliesTo(OTHER_GROUP)).toHaveLength(3);
  });
});
