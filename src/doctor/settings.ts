/**
 * Settings that cannot work whatever the network says: the commonest first-run mistake is no
 * model at all (OpenAI's endpoint, the default, without a key). Checked before anything starts.
 */
import { ConfigError, mainApiKey, type Config } from "../../config/index.js";
import { fail, hostOf, ok, type CheckResult } from "./check.js";

/** What `npm start` prints when there is no model to talk to. */
export const LLM_GUIDANCE = `longhaul needs an OpenAI-compatible model endpoint. \`npm run setup\` asks for one
(with its key, tested) and writes it down. Or set it yourself, for example:

  OpenAI:  LLM_API_KEY=sk-... LLM_MODEL=gpt-4o-mini npm start
  Ollama:  LLM_BASE_URL=http://127.0.0.1:11434/v1 LLM_MODEL=llama3.1 LLM_CONTEXT_WINDOW=8192 npm start

OpenRouter, vLLM, llama.cpp's server and LM Studio work the same way (LLM_BASE_URL, LLM_API_KEY,
LLM_MODEL). The settings can also live in config/longhaul.yaml; config/example.env lists them all.
\`npm run doctor\` checks them (the endpoint, the key, the model) before you start.`;

const isOpenAi = (url: string): boolean => hostOf(url) === "api.openai.com";

/** Only the worker side calls a model: a gateway alone needs none. */
const runsTurns = (config: Config): boolean => config.LONGHAUL_ROLE !== "gateway";

export function settingsResults(config: Config): CheckResult[] {
  const results: CheckResult[] = [];
  if (runsTurns(config) && isOpenAi(config.LLM_BASE_URL) && !mainApiKey(config)) {
    results.push(fail("config", "no LLM configured: LLM_BASE_URL is OpenAI's (the default) and neither LLM_API_KEY nor OPENAI_API_KEY is set",
      "set LLM_API_KEY for OpenAI, or LLM_BASE_URL + LLM_MODEL for another server (Ollama: http://127.0.0.1:11434/v1)"));
  } else if (runsTurns(config) && config.SUMMARY_BASE_URL && isOpenAi(config.SUMMARY_BASE_URL) && !(config.SUMMARY_API_KEY ?? mainApiKey(config))) {
    results.push(fail("config", "the summarizer points at OpenAI (SUMMARY_BASE_URL) without a key", "set SUMMARY_API_KEY, or unset SUMMARY_BASE_URL to summarize with the main model"));
  }
  if (results.length === 0) {
    const model = runsTurns(config) ? `, model ${config.LLM_MODEL} at ${hostOf(config.LLM_BASE_URL)}` : "";
    results.push(ok("config", `settings valid: role ${config.LONGHAUL_ROLE}${model}`));
  }
  return results;
}

/** Throws a `ConfigError` carrying the guidance when this role must call a model and none is set. */
export function assertModelConfigured(config: Config): void {
  const failures = settingsResults(config).filter((result) => result.status === "fail");
  if (failures.length === 0) return;
  throw new ConfigError(`${failures.map((result) => `${result.detail}.`).join("\n")}\n\n${LLM_GUIDANCE}`);
}
