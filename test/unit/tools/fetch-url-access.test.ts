/** fetch_url is off by default: offered only where access.tools names it, never through "*"; the address policy behind it. */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../config/index.js";
import { createLogger } from "../../../src/logger.js";
import { allowedOptionalTools, describeTools, publicAddressPolicy, ToolCatalog, type Tool, type ToolScope } from "../../../src/tools/index.js";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const scope = (overrides: Partial<ToolScope> = {}): ToolScope => ({ sessionKey: "tg:-100", platform: "telegram", chatId: "-100", userIds: ["1"], ...overrides });
const optional = ["fetch_url"];

const fakeFetchUrl: Tool = {
  definition: { type: "function", function: { name: "fetch_url", description: "Read a web page. More.", parameters: { type: "object", properties: {} } } },
  run: async () => "page",
};

describe("opt-in built-ins (fetch_url) under access.tools", () => {
  it("are off without an access section and where it does not name them; '*' does not grant them", () => {
    expect(allowedOptionalTools(optional, undefined, scope())).toEqual([]);
    expect(allowedOptionalTools(optional, { default: ["*"], chats: { "tg:-100": ["*"] }, users: { "tg:1": ["*"] } }, scope())).toEqual([]);
    expect(allowedOptionalTools(optional, { default: [], chats: { "tg:-200": ["fetch_url"] }, users: {} }, scope())).toEqual([]);
  });

  it("are granted by name to every chat, one chat (a topic through its chat), or a user when every speaker has it", () => {
    expect(allowedOptionalTools(optional, { default: ["fetch_url"], chats: {}, users: {} }, scope())).toEqual(["fetch_url"]);
    expect(allowedOptionalTools(optional, { default: [], chats: { "tg:-100": ["fetch_url"] }, users: {} }, scope({ sessionKey: "tg:-100:7" }))).toEqual(["fetch_url"]);
    const users = { default: [], chats: {}, users: { "tg:1": ["fetch_url"], "tg:2": ["files"] } };
    expect(allowedOptionalTools(optional, users, scope({ userIds: ["1"] }))).toEqual(["fetch_url"]);
    expect(allowedOptionalTools(optional, users, scope({ userIds: ["1", "2"] }))).toEqual([]);
  });

  it("the catalog offers the tool (and /tools lists it) only in the granted chat", async () => {
    const logger = createLogger({ level: "silent" });
    const catalog = new ToolCatalog({ builtins: [], optional: [fakeFetchUrl], access: { default: [], chats: { "tg:-100": ["fetch_url"] }, users: {} }, logger });
    const granted = await catalog.forTurn(scope(), logger);
    expect(granted.tools.get("fetch_url")).toBe(fakeFetchUrl);
    expect(describeTools(granted, catalog.builtins)).toContain("• fetch_url — Read a web page.");
    const other = await catalog.forTurn(scope({ sessionKey: "tg:-200", chatId: "-200" }), logger);
    expect(other.tools.get("fetch_url")).toBeUndefined();
    expect(describeTools(other, catalog.builtins)).not.toContain("fetch_url");
    const open = new ToolCatalog({ builtins: [], optional: [fakeFetchUrl], logger });
    expect((await open.forTurn(scope(), logger)).tools.get("fetch_url")).toBeUndefined();
  });

  it("the config accepts fetch_url in access.tools and refuses an MCP server of that name", () => {
    const file = (yaml: string) => {
      const path = join(mkdtempSync(join(tmpdir(), "lh-fetch-")), "longhaul.yaml");
      writeFileSync(path, yaml);
      return path;
    };
    expect(loadConfig({ LONGHAUL_CONFIG_FILE: file("access: { tools: { chats: { 'tg:1': [fetch_url] } } }\n") }).access?.tools?.chats["tg:1"]).toEqual(["fetch_url"]);
    expect(() => loadConfig({ LONGHAUL_CONFIG_FILE: file("mcp: { servers: { fetch_url: { command: node } } }\n") })).toThrow(/mcp\.servers\.fetch_url: "fetch_url" is a built-in tool's name/);
  });
});

describe("fetch_url's address policy", () => {
  const policy = publicAddressPolicy();
  it("allows public unicast addresses only", () => {
    for (const address of ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "[2a00:1450:4001:80b::200e]"]) expect(policy.allows(address), address).toBe(true);
    for (const address of [
      "127.0.0.1", "127.8.9.10", "0.0.0.0", "10.0.0.1", "172.16.5.4", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "224.0.0.1", "255.255.255.255", "198.18.0.1",
      "::1", "::", "fe80::1", "fe80::1%eth0", "fc00::1", "fd12:3456::1", "fec0::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1", "2002:a00:1::", "not an address", "",
    ]) expect(policy.allows(address), address).toBe(false);
  });

  it("a test allowlist admits exact addresses, in any spelling, and nothing beside them", () => {
    const test = publicAddressPolicy(["127.0.0.1"]);
    expect(test.allows("127.0.0.1")).toBe(true);
    expect(test.allows("::ffff:127.0.0.1")).toBe(true);
    expect(test.allows("127.0.0.2")).toBe(false);
    expect(test.allows("::1")).toBe(false);
  });
});
