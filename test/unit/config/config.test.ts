import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ConfigError, configSchema, loadConfig, mainApiKey } from "../../../config/index.js";
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
