/**
 * fetch_url through the whole pipeline: the fake LLM calls it, the real worker fetches a page
 * from a loopback fixture server (allowed through the test-only allowlist, which no config key
 * reaches), the page's readable text comes back as the tool result, capped like every tool's and
 * paged through recall. Off by default: offered only in the chat access.tools names.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, textOf, type FakeLlm, type RecordedRequest } from "../fakes/fake-llm.js";
import { testConfig } from "../helpers/config.js";
import { writeConfigFile } from "../helpers/mcp.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { RecordingAdapter, inbound } from "../helpers/recording-adapter.js";
import { warmUpTokenizer } from "../helpers/telegram-pipeline.js";

const READER = "2001";
const OTHER = "2002";

const toolNames = (request: RecordedRequest | undefined) => ((request?.body.tools ?? []) as Array<{ function: { name: string } }>).map((tool) => tool.function.name);
const toolResults = (request: RecordedRequest | undefined) => (request?.body.messages ?? []).filter((message) => message.role === "tool").map((message) => textOf(message.content));

const paragraphs = Array.from({ length: 60 }, (_, index) => `<p>Paragraph ${String(index).padStart(2, "0")} of the harbour report: the tide tables, the ferry times and the weather for the coming week.</p>`).join("\n");
const PAGE = `<!doctype html><html><head><title>Harbour report</title></head><body><nav>Home · About</nav><article><h1>Harbour report</h1>${paragraphs}</article></body></html>`;

describe("fetch_url through the pipeline", () => {
  let llm: FakeLlm;
  let adapter: RecordingAdapter;
  let pipeline: Pipeline;
  let server: Server;
  let pageUrl: string;

  beforeAll(async () => {
    warmUpTokenizer();
    llm = await startFakeLlm();
    server = createServer((_request, response) => {
      response.setHeader("content-type", "text/html; charset=utf-8");
      response.end(PAGE);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    pageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/report`;
    const file = writeConfigFile({ access: { tools: { chats: { [`tg:${READER}`]: ["fetch_url"] } } } });
    const config = testConfig({ LLM_BASE_URL: llm.url, LONGHAUL_CONFIG_FILE: file, ALLOWED_TELEGRAM_USERS: `${READER},${OTHER}`, TOOL_OUTPUT_MAX_CHARS: "2000" });
    adapter = new RecordingAdapter("telegram");
    pipeline = await startPipeline(config, [adapter], { fetchTestAllow: ["127.0.0.1"] });
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  });

  const send = (chatId: string, text: string) =>
    adapter.submit(inbound({ platform: "telegram", text, chatId, sessionKey: `tg:${chatId}`, chatType: "private", userId: chatId, userName: "Ada" }));
  const replies = (chatId: string) => adapter.sent.filter((entry) => entry.reply.target.chatId === chatId).map((entry) => entry.reply);

  it("reads the page in the chat that may: the text is capped, and recall pages through the rest", async () => {
    let step = 0;
    llm.setHandler((request) => {
      step++;
      if (step === 1) return { toolCalls: [{ name: "fetch_url", arguments: { url: pageUrl } }] };
      if (step === 2) {
        const reference = /recall with id "(m\d+)" and offset (\d+)/.exec(toolResults(request)[0] ?? "");
        return { toolCalls: [{ name: "recall", arguments: { id: reference?.[1], offset: Number(reference?.[2]), length: 20_000 } }] };
      }
      return { text: "read it" };
    });
    const before = llm.requests.length;
    await send(READER, "what does the harbour report say?");
    await adapter.waitFor(() => replies(READER).length >= 1, 90_000);
    expect(replies(READER)[0]?.text).toBe("read it");
    expect(toolNames(llm.requests[before])).toContain("fetch_url");
    const [capped, page] = toolResults(llm.requests.at(-1));
    expect(capped!.length).toBeLessThanOrEqual(2000);
    expect(capped).toMatch(new RegExp(`^URL: ${pageUrl.replace(/[.]/g, "\\.")}\\n\\n# Harbour report\\n\\nParagraph 00 of the harbour report`));
    expect(capped).not.toContain("Home · About");
    expect(capped).toMatch(/\[output cut: the first \d+ of \d+ characters are shown/);
    // The recall page is a tool output too, capped the same way: it reads on where the cut was.
    expect(capped).not.toContain("Paragraph 20 of");
    expect(page).toMatch(/^m\d+ \(tool output, characters \d+–\d+ of \d+\)/);
    expect(page).toContain("Paragraph 20 of the harbour report");
  }, 120_000);

  it("is not offered in a chat access.tools does not name", async () => {
    llm.setHandler(() => ({ text: "no web here" }));
    const before = llm.requests.length;
    await send(OTHER, "read a page for me");
    await adapter.waitFor(() => replies(OTHER).length >= 1, 60_000);
    expect(toolNames(llm.requests[before])).not.toContain("fetch_url");
    expect(toolNames(llm.requests[before])).toContain("recall");
  }, 90_000);
});
