/** One list of every secret the configuration holds (config/secrets.ts), for log masking. */
import { describe, expect, it } from "vitest";
import { configSecrets, loadConfig } from "../../../config/index.js";
import { writeConfigFile } from "../../helpers/config-file.js";

describe("configSecrets", () => {
  it("lists flat keys, URL passwords, catalogue keys, MCP headers and secret env values, ${VAR} values; nothing else", () => {
    const file = writeConfigFile([
      "models:",
      "  list:",
      "    fast: { id: gpt-4o-mini }",
      "    big: { id: claude-x, endpoint: \"https://api.example.com/v1?key=gem-QUERY-key-123\", api_key: \"cat-LITERAL-key-456\" }",
      "    env: { id: other, endpoint: \"https://api.example.com/v1\", api_key: \"${OTHER_KEY}\" }",
      "mcp:",
      "  servers:",
      "    search: { url: \"http://127.0.0.1:9/mcp\", headers: { Authorization: \"Bearer mcp-BEARER-789\", X-Team: \"team-HEADER-321\" } }",
      "    files: { command: node, args: [server.js], env: { GITHUB_TOKEN: \"ghp-ENV-token-654\", LOG_LEVEL: \"verbose\" } }",
      "",
    ].join("\n"));
    const config = loadConfig({
      LONGHAUL_CONFIG_FILE: file,
      OTHER_KEY: "env-INTERPOLATED-999",
      REDIS_URL: "redis://default:redis-PASS%40word@10.0.0.5:6379/0",
      LLM_API_KEY: "sk-main-KEY-111",
      TRANSCRIBE_API_KEY: "tr-TRANSCRIBE-222",
      TELEGRAM_BOT_TOKEN: "123:tg-TOKEN-333",
      REDIS_SENTINEL_PASSWORD: "sentinel-PASS-444",
      LLM_BASE_URL: "https://proxy-user:proxy-PASS-555@llm.example.com/v1",
    });
    const secrets = configSecrets(config);
    for (const secret of [
      "sk-main-KEY-111", "tr-TRANSCRIBE-222", "123:tg-TOKEN-333", "sentinel-PASS-444",
      "redis-PASS%40word", "redis-PASS@word", "proxy-PASS-555", "gem-QUERY-key-123",
      "cat-LITERAL-key-456", "env-INTERPOLATED-999", "Bearer mcp-BEARER-789", "mcp-BEARER-789", "team-HEADER-321", "ghp-ENV-token-654",
    ]) expect(secrets, secret).toContain(secret);
    for (const harmless of ["default", "proxy-user", "verbose", "gpt-4o-mini", "https://api.example.com/v1", "node"]) expect(secrets).not.toContain(harmless);
  });
});
