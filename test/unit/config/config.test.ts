import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, configSchema, configSecrets, loadConfig, mainApiKey } from "../../../config/index.js";
import { describeConfig } from "../../../scripts/config-docs.js";

describe("configuration", () => {
  it("has a default or an explicit 'unset' and a description for every key", () => {
    for (const doc of describeConfig()) {
      expect(doc.description, doc.key).not.toBe("");
    }
    const config = loadConfig({});
    expect(config.HYGIENE_THRESHOLD).toBe(0.85);
    expect(config.COMPACTION_THRESHOLD).toBe(0.5);
    expect(config.COMPACTION_TARGET_RATIO).toBe(0.2);
    expect(config.PROTECT_LAST_N).toBe(20);
    expect(config.LONGHAUL_ROLE).toBe("all");
    expect(config.HTTP_PORT).toBe(8080);
    expect(config.LOG_LEVEL).toBe("info");
    expect(config.TELEGRAM_API_ROOT).toBe("https://api.telegram.org");
    expect(config.ALLOWED_TELEGRAM_USERS).toEqual([]);
    expect(config.REDIS_URL).toBeUndefined();
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("parses lists, numbers and the key fallback", () => {
    const config = loadConfig({ ALLOWED_TELEGRAM_USERS: " 1, 2 ,,3 ", HTTP_PORT: "9000", OPENAI_API_KEY: "sk-fallback" });
    expect(config.ALLOWED_TELEGRAM_USERS).toEqual(["1", "2", "3"]);
    expect(config.HTTP_PORT).toBe(9000);
    expect(mainApiKey(config)).toBe("sk-fallback");
    expect(mainApiKey(loadConfig({ OPENAI_API_KEY: "sk-fallback", LLM_API_KEY: "sk-main" }))).toBe("sk-main");
  });

  it("stops with a message naming every wrong variable", () => {
    const attempt = () => loadConfig({ COMPACTION_THRESHOLD: "2", LONGHAUL_ROLE: "boss", REDIS_URL: "http://nope", HTTP_PORT: "-1" });
    expect(attempt).toThrow(ConfigError);
    try {
      attempt();
    } catch (error) {
      const message = (error as Error).message;
      for (const key of ["COMPACTION_THRESHOLD", "LONGHAUL_ROLE", "REDIS_URL", "HTTP_PORT"]) expect(message).toContain(key);
    }
  });

  it("requires a webhook secret with a webhook URL", () => {
    expect(() => loadConfig({ TELEGRAM_WEBHOOK_URL: "https://bot.example.com/telegram/webhook" })).toThrow(/TELEGRAM_WEBHOOK_SECRET/);
  });

  it("treats empty strings as unset", () => {
    expect(loadConfig({ REDIS_URL: "", LLM_CONTEXT_WINDOW: "" }).REDIS_URL).toBeUndefined();
  });

  it("keeps config/example.env and the README table in step with the schema", () => {
    const example = readFileSync(new URL("../../../config/example.env", import.meta.url), "utf8");
    const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
    for (const key of Object.keys(configSchema.shape)) {
      expect(example, key).toMatch(new RegExp(`^#? ?${key}=`, "m"));
      expect(readme, key).toContain(`\`${key}\``);
    }
  });
});

describe("configuration file", () => {
  const withFile = (yaml: string) => {
    const dir = mkdtempSync(join(tmpdir(), "lh-config-"));
    const file = join(dir, "longhaul.yaml");
    writeFileSync(file, yaml);
    return file;
  };

  it("reads flat keys from the file, the environment winning", () => {
    const file = withFile("LLM_MODEL: from-file\nPROTECT_LAST_N: 7\nALLOWED_TELEGRAM_USERS: [1, 2]\n");
    const config = loadConfig({ LONGHAUL_CONFIG_FILE: file, LLM_MODEL: "from-env" });
    expect(config.LLM_MODEL).toBe("from-env");
    expect(config.PROTECT_LAST_N).toBe(7);
    expect(config.ALLOWED_TELEGRAM_USERS).toEqual(["1", "2"]);
  });

  it("reads ${VAR} from the environment and treats the value as a secret", () => {
    const file = withFile("LLM_API_KEY: ${MY_KEY}\nSYSTEM_PROMPT: \"costs $${PRICE} here\"\n");
    const config = loadConfig({ LONGHAUL_CONFIG_FILE: file, MY_KEY: "sk-interpolated-0123" });
    expect(config.LLM_API_KEY).toBe("sk-interpolated-0123");
    expect(config.SYSTEM_PROMPT).toBe("costs ${PRICE} here");
    expect(configSecrets(config)).toContain("sk-interpolated-0123");
  });

  it("names the path of a ${VAR} that is not set, and never its value", () => {
    const file = withFile("LLM_API_KEY: ${MISSING_KEY}\n");
    expect(() => loadConfig({ LONGHAUL_CONFIG_FILE: file })).toThrow(/LLM_API_KEY refers to \$\{MISSING_KEY\}/);
  });

  it("refuses unknown keys and files that are not a mapping", () => {
    expect(() => loadConfig({ LONGHAUL_CONFIG_FILE: withFile("NOT_A_KEY: 1\n") })).toThrow(/unknown key NOT_A_KEY/);
    expect(() => loadConfig({ LONGHAUL_CONFIG_FILE: withFile("- a\n- b\n") })).toThrow(/expected a mapping/);
    expect(() => loadConfig({ LONGHAUL_CONFIG_FILE: withFile("LLM_MODEL: { nested: 1 }\n") })).toThrow(/LLM_MODEL must be a single value/);
  });

  it("reads mcp and access sections, and names the path of every mistake", () => {
    const good = withFile([
      "mcp:",
      "  servers:",
      "    files: { command: node, args: [server.js], approval: { tools: [write_file] } }",
      "    search: { url: 'http://127.0.0.1:3001/mcp', headers: { Authorization: 'Bearer ${SEARCH_TOKEN}' } }",
      "access:",
      "  tools: { default: [files], users: { 'tg:42': ['*'] } }",
    ].join("\n"));
    const config = loadConfig({ LONGHAUL_CONFIG_FILE: good, SEARCH_TOKEN: "tok-SECRET-1" });
    expect(config.mcp?.servers.files).toMatchObject({ command: "node", timeout_ms: 60_000, approval: { tools: ["write_file"] }, tools: { include: ["*"], exclude: [] } });
    expect(config.mcp?.servers.search?.headers).toEqual({ Authorization: "Bearer tok-SECRET-1" });
    expect(configSecrets(config)).toContain("tok-SECRET-1");

    const bad = (yaml: string) => () => loadConfig({ LONGHAUL_CONFIG_FILE: withFile(yaml) });
    expect(bad("mcp: { servers: { files: { args: [x] } } }")).toThrow(/mcp\.servers\.files: set either command .* or url/);
    expect(bad("mcp: { servers: { files: { command: node, headers: { a: b } } } }")).toThrow(/mcp\.servers\.files\.headers: only for HTTP servers/);
    expect(bad("mcp: { servers: { files: { command: node, approval: sometimes } } }")).toThrow(/mcp\.servers\.files\.approval/);
    expect(bad("mcp: { servers: { bad__name: { command: node } } }")).toThrow(/mcp\.servers\.bad__name/);
    expect(bad("mcp: { servers: { files: { command: node } } }\naccess: { tools: { chats: { 'tg:1': [nope] } } }")).toThrow(/access\.tools\.chats\.tg:1: no server "nope" in mcp\.servers/);
  });
});

