import { describe, expect, it } from "vitest";
import type { PendingApproval } from "../../../src/core/tools.js";
import {
  allowedServers, capToolResult, mayAnswer, outputCapChars, parseApprovalAction, approvalActions, summariseArguments, type ToolScope,
} from "../../../src/tools/index.js";
import { exposedToolName, matchesPattern } from "../../../src/tools/mcp/index.js";
import { toToolOutput } from "../../../src/tools/mcp/convert.js";

const scope = (overrides: Partial<ToolScope> = {}): ToolScope => ({ sessionKey: "tg:-100", platform: "telegram", chatId: "-100", userIds: ["1"], ...overrides });
const servers = ["files", "search", "memory"];

describe("access.tools", () => {
  it("offers every server when there is no access section, and only what it grants when there is one", () => {
    expect(allowedServers(servers, undefined, scope())).toEqual(servers);
    expect(allowedServers(servers, { default: [], chats: {}, users: {} }, scope())).toEqual([]);
    expect(allowedServers(servers, { default: ["files"], chats: { "tg:-100": ["search"] }, users: {} }, scope())).toEqual(["files", "search"]);
  });

  it("matches a topic's chat and a Discord thread's parent channel", () => {
    const access = { default: [], chats: { "tg:-100": ["files"], "dc:555": ["search"] }, users: {} };
    expect(allowedServers(servers, access, scope({ sessionKey: "tg:-100:7" }))).toEqual(["files"]);
    expect(allowedServers(servers, access, scope({ sessionKey: "dc:999", platform: "discord", chatId: "999", parentChatId: "555" }))).toEqual(["search"]);
  });

  it("applies a user grant only when every speaker of the turn has it", () => {
    const access = { default: [], chats: {}, users: { "tg:1": ["*"], "tg:2": ["memory"] } };
    expect(allowedServers(servers, access, scope({ userIds: ["1"] }))).toEqual(servers);
    expect(allowedServers(servers, access, scope({ userIds: ["1", "2"] }))).toEqual(["memory"]);
    expect(allowedServers(servers, access, scope({ userIds: ["1", "3"] }))).toEqual([]);
  });
});

describe("output caps", () => {
  it("scales the cap down for small windows, never below 1,000 characters", () => {
    expect(outputCapChars({ configured: 50_000, contextWindow: 128_000 })).toBe(50_000);
    expect(outputCapChars({ configured: 50_000, contextWindow: 8_192 })).toBe(3_276);
    expect(outputCapChars({ configured: 50_000, contextWindow: 1_000 })).toBe(1_000);
    expect(outputCapChars({ configured: 50_000, contextWindow: 128_000, perTool: 2_000 })).toBe(2_000);
  });

  it("keeps a preview and a reference within the cap, and stores the original once", async () => {
    const saved: Array<[string, string]> = [];
    const writer = { save: async (id: string, text: string) => void saved.push([id, text]) };
    const original = "x".repeat(10_000);
    const capped = await capToolResult({ id: "m7", role: "tool", tool_call_id: "c", content: original }, 1_000, writer);
    expect(capped.content.length).toBeLessThanOrEqual(1_000);
    expect(capped).toMatchObject({ kind: "truncated", originalId: "m7" });
    const shown = Number(/the first (\d+) of 10000/.exec(capped.content)?.[1]);
    expect(capped.content).toContain(`recall with id "m7" and offset ${shown}`);
    expect(saved).toEqual([["m7", original]]);
    const small = await capToolResult({ id: "m8", role: "tool", tool_call_id: "c", content: "short" }, 1_000, writer);
    expect(small.content).toBe("short");
    expect(saved).toHaveLength(1);
  });
});

describe("approval", () => {
  const pending = { requestedBy: { platform: "telegram", userId: "1", userName: "Ada" } } as PendingApproval;

  it("round-trips action ids within Telegram's 64 bytes", () => {
    const id = "0b7c6a4e-2f1d-4c39-9d6e-5a8f7e1b2c3d";
    const [approve, deny] = approvalActions(id);
    expect(Buffer.byteLength(approve!.id)).toBeLessThanOrEqual(64);
    expect(parseApprovalAction(approve!.id)).toEqual({ approve: true, approvalId: id });
    expect(parseApprovalAction(deny!.id)).toEqual({ approve: false, approvalId: id });
    expect(parseApprovalAction("something else")).toBeUndefined();
  });

  it("lets the requester, an admin of the same platform and the console answer, nobody else", () => {
    const admins = { telegram: ["9"], discord: ["1"] };
    expect(mayAnswer(pending, { platform: "telegram", userId: "1" }, admins)).toBe(true);
    expect(mayAnswer(pending, { platform: "telegram", userId: "9" }, admins)).toBe(true);
    expect(mayAnswer(pending, { platform: "telegram", userId: "2" }, admins)).toBe(false);
    expect(mayAnswer(pending, { platform: "discord", userId: "2" }, admins)).toBe(false);
    expect(mayAnswer(pending, { platform: "console", userId: "you" }, admins)).toBe(true);
  });

  it("shows arguments whole in a code block: every key, every value, never shortened", () => {
    const text = summariseArguments(JSON.stringify({ path: "/tmp/a.txt", content: "y".repeat(500) }));
    expect(text).toBe(`arguments:\n\`\`\`json\n{\n  "path": "/tmp/a.txt",\n  "content": "${"y".repeat(500)}"\n}\n\`\`\``);
    expect(summariseArguments("{}")).toBe("no arguments");
    expect(summariseArguments("{oops\nrm -rf ~ \\`x`")).toBe("arguments (not JSON, 19 characters, exactly):\n```\n{oops\nrm -rf ~ \\u005c\\u0060x\\u0060\n```");
  });
});

describe("MCP naming and results", () => {
  it("exposes server__tool, sanitized and digested only when needed", () => {
    expect(exposedToolName("files", "read_file")).toBe("files__read_file");
    expect(exposedToolName("every", "get-sum")).toBe("every__get-sum");
    const dotted = exposedToolName("gh", "repos.list");
    expect(dotted).toMatch(/^gh__repos_list_[0-9a-f]{8}$/);
    expect(exposedToolName("gh", "repos_list")).toBe("gh__repos_list");
    const long = exposedToolName("server", "a".repeat(100));
    expect(long.length).toBeLessThanOrEqual(64);
    expect(long).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(matchesPattern("read_file", "read_*")).toBe(true);
    expect(matchesPattern("write_file", "read_*")).toBe(false);
    expect(matchesPattern("a.b", "a?b")).toBe(true);
  });

  it("shows structured content once, marks errors, and describes what it cannot show", () => {
    expect(toToolOutput({ content: [{ type: "text", text: '{"a":1}' }], structuredContent: { a: 1 } }, "s__t")).toEqual({ text: '{"a":1}' });
    expect(toToolOutput({ content: [], structuredContent: { a: 1 } }, "s__t")).toEqual({ text: '{"a":1}' });
    expect(toToolOutput({ content: [{ type: "text", text: "boom" }], isError: true }, "s__t")).toEqual({ text: "Error from s__t: boom", isError: true });
    expect(toToolOutput({ content: [{ type: "resource_link", uri: "file:///a", name: "a" }, { type: "audio", data: "AAAA", mimeType: "audio/wav" }] }, "s__t").text)
      .toBe("[resource: file:///a (a)]\n[audio: audio/wav, 3 bytes; not shown]");
    expect(toToolOutput({ content: [] }, "s__t")).toEqual({ text: "(no output)" });
  });
});
