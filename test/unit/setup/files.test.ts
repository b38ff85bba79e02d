/**
 * The files setup edits: the YAML keeps comments, key order, sections and keys setup does not
 * know; .env keeps its other lines, is mode 600 whatever the umask or the old file's mode, and
 * reads back through Node's parser (the one loadConfig uses) to exactly what was set.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig, withSecretsFile } from "../../../config/index.js";
import { ConfigFile, EnvFile } from "../../../src/setup/files.js";
import { clashesWithHttpPort, presetOf } from "../../../src/setup/presets.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "longhaul-setup-files-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("ConfigFile", () => {
  it("edits values in place, keeping comments, order and what it does not know", () => {
    const path = join(dir, "longhaul.yaml");
    writeFileSync(path, [
      "# my notes about this bot",
      "LLM_MODEL: old-model   # the cheap one",
      "TZ: Europe/Berlin",
      "models:",
      "  list:",
      "    mini: { id: gpt-4o-mini }   # keep me",
      "",
    ].join("\n"));
    const file = ConfigFile.read(path);
    expect(file.get("LLM_MODEL")).toBe("old-model");
    file.set("LLM_MODEL", "new-model");
    file.set("LLM_BASE_URL", "http://127.0.0.1:11434/v1");
    file.set("ADMIN_TELEGRAM_USERS", ["42", "43"]);
    file.save();
    const text = readFileSync(path, "utf8");
    expect(text).toContain("# my notes about this bot");
    expect(text).toContain("LLM_MODEL: new-model # the cheap one");
    expect(text).toContain("mini: { id: gpt-4o-mini } # keep me");
    expect(text.indexOf("LLM_MODEL")).toBeLessThan(text.indexOf("TZ:"));
    const config = loadConfig({ LONGHAUL_CONFIG_FILE: path, LONGHAUL_ENV_FILE: "/dev/null" });
    expect(config.LLM_MODEL).toBe("new-model");
    expect(config.TZ).toBe("Europe/Berlin");
    expect(config.ADMIN_TELEGRAM_USERS).toEqual(["42", "43"]);
    expect(ConfigFile.read(path).get("ADMIN_TELEGRAM_USERS")).toBe("42,43");
  });

  it("starts a missing file with a header, and removes a key set to undefined", () => {
    const path = join(dir, "sub", "longhaul.yaml");
    const file = ConfigFile.read(path);
    file.set("LLM_MODEL", "m");
    file.set("LLM_API_KEY", "sk-should-not-stay");
    file.set("LLM_API_KEY", undefined);
    file.save();
    const text = readFileSync(path, "utf8");
    expect(text).toMatch(/^# longhaul configuration/);
    expect(text).not.toContain("LLM_API_KEY");
    expect(loadConfig({ LONGHAUL_CONFIG_FILE: path, LONGHAUL_ENV_FILE: "/dev/null" }).LLM_MODEL).toBe("m");
  });

  it("refuses a file that is not valid YAML instead of overwriting it", () => {
    const path = join(dir, "broken.yaml");
    writeFileSync(path, "LLM_MODEL: [unclosed\n");
    expect(() => ConfigFile.read(path)).toThrow(/not valid YAML/);
  });
});

describe("EnvFile", () => {
  it("replaces and appends keys, keeps other lines, and is mode 600 even when it was 644", () => {
    const path = join(dir, ".env");
    writeFileSync(path, "# mine\nexport OTHER=1\nLLM_API_KEY=old\n");
    chmodSync(path, 0o644);
    const previous = process.umask(0o022);
    try {
      const file = EnvFile.read(path);
      file.set("LLM_API_KEY", "sk-new #with spaces and 'quote");
      file.set("TELEGRAM_BOT_TOKEN", "123:ABC-def_ghi");
      file.save();
    } finally {
      process.umask(previous);
    }
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const text = readFileSync(path, "utf8");
    expect(text.startsWith("# mine\nexport OTHER=1\n")).toBe(true);
    expect(text.match(/LLM_API_KEY=/g)).toHaveLength(1);
    expect(EnvFile.read(path).values()).toEqual({ OTHER: "1", LLM_API_KEY: "sk-new #with spaces and 'quote", TELEGRAM_BOT_TOKEN: "123:ABC-def_ghi" });
  });

  it("a new file is created mode 600 and unset removes the key", () => {
    const path = join(dir, "new.env");
    const file = EnvFile.read(path);
    file.set("LLM_API_KEY", "sk-1");
    file.set("DISCORD_BOT_TOKEN", "d.t");
    file.unset("LLM_API_KEY");
    file.save();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(EnvFile.read(path).values()).toEqual({ DISCORD_BOT_TOKEN: "d.t" });
    expect(() => file.set("X", "two\nlines")).toThrow(/span lines/);
  });
});

describe("withSecretsFile", () => {
  it("puts LONGHAUL_ENV_FILE below the process's own variables, for the entry points' loadConfig", () => {
    const path = join(dir, ".env");
    writeFileSync(path, "LLM_API_KEY=sk-from-file-0123\nLLM_MODEL=file-model\nTELEGRAM_BOT_TOKEN=1:file\n");
    const config = loadConfig(withSecretsFile({ LONGHAUL_ENV_FILE: path, LONGHAUL_CONFIG_FILE: "/dev/null", LLM_MODEL: "env-model", TELEGRAM_BOT_TOKEN: "" }));
    expect(config.LLM_API_KEY).toBe("sk-from-file-0123");
    expect(config.LLM_MODEL).toBe("env-model");
    // An empty variable counts as unset: the file's value stands.
    expect(config.TELEGRAM_BOT_TOKEN).toBe("1:file");
    expect(() => withSecretsFile({ LONGHAUL_ENV_FILE: join(dir, "missing.env") })).toThrow(/LONGHAUL_ENV_FILE: no such file/);
    // loadConfig alone reads no secrets file: a test's or a bench's own environment stays its own.
    expect(loadConfig({ LONGHAUL_ENV_FILE: path, LONGHAUL_CONFIG_FILE: "/dev/null" }).LLM_API_KEY).toBeUndefined();
  });
});

describe("presets", () => {
  it("recognises the preset a configuration was made with", () => {
    expect(presetOf({ LLM_BASE_URL: "http://127.0.0.1:11434/v1/" })?.id).toBe("ollama");
    expect(presetOf({ LLM_BASE_URL: "https://openrouter.ai/api/v1", LLM_PROVIDER: "openrouter" })?.id).toBe("openrouter");
    expect(presetOf({ LLM_BASE_URL: "http://gpu-box:9000/v1" })?.id).toBe("custom");
    expect(presetOf({})).toBeUndefined();
  });

  it("sees a local model server on longhaul's own HTTP port", () => {
    expect(clashesWithHttpPort("http://127.0.0.1:8080/v1", 8080)).toBe(true);
    expect(clashesWithHttpPort("http://localhost:8080/v1", 8081)).toBe(false);
    expect(clashesWithHttpPort("http://gpu-box:8080/v1", 8080)).toBe(false);
  });
});
