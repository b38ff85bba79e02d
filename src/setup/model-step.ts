/**
 * The model step of setup: a provider from the presets (or any OpenAI-compatible URL), its base
 * URL and model, the key (typed without an echo, or read from the variable `--api-key-env`
 * names), and one real completion through the worker's own LLM client (the doctor's check), so
 * a wrong key is refused here with the provider's own words.
 */
import { checkCompletion, type LlmEndpoint } from "../doctor/llm.js";
import { formatResult, type CheckResult } from "../doctor/index.js";
import { detectProvider, PROVIDER_NAMES, type ProviderName } from "../llm/index.js";
import type { Asker } from "./asker.js";
import type { ConfigFile, EnvFile } from "./files.js";
import { presetById, presetOf, PRESETS, type ProviderPreset } from "./presets.js";

export interface ModelOptions {
  provider?: string | undefined;
  baseUrl?: string | undefined;
  model?: string | undefined;
  contextWindow?: string | undefined;
  /** The name of the environment variable holding the key. */
  apiKeyEnv?: string | undefined;
  timeoutMs: number;
}

export interface ModelChoice {
  provider: ProviderName | undefined;
  baseUrl: string;
  model: string;
  contextWindow: string | undefined;
  /** undefined: none entered (a local server), and none kept. */
  apiKey: string | undefined;
  /** The completion check's line. */
  check: CheckResult;
}

/** The step failed and nothing is written: `--yes` with a refused key, or the person quit. */
export class StepFailedError extends Error {
  override readonly name = "StepFailedError";
  constructor(message: string, readonly exitCode: number) {
    super(message);
  }
}

const isUrl = (value: string): string | true => {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:" ? true : "an http:// or https:// URL";
  } catch {
    return "an http:// or https:// URL";
  }
};

const isWindow = (value: string): string | true => (value === "" || /^[1-9]\d*$/.test(value) ? true : "a number of tokens, e.g. 8192");

export async function chooseModel(ask: Asker, options: ModelOptions, files: { config: ConfigFile; env: EnvFile }, env: NodeJS.ProcessEnv): Promise<ModelChoice> {
  for (;;) {
    const settings = await modelSettings(ask, options, files.config);
    const sameEndpoint = files.config.get("LLM_BASE_URL") === settings.baseUrl;
    const choice = await keyAndCheck(ask, options, settings, sameEndpoint ? files.env.get("LLM_API_KEY") : undefined, env);
    if (choice !== "again") return choice;
    // Asked again: the flags have had their say.
    options = { timeoutMs: options.timeoutMs };
  }
}

interface ModelSettings {
  preset: ProviderPreset;
  provider: ProviderName | undefined;
  baseUrl: string;
  model: string;
  contextWindow: string | undefined;
}

async function modelSettings(ask: Asker, options: ModelOptions, config: ConfigFile): Promise<ModelSettings> {
  const current = { LLM_PROVIDER: config.get("LLM_PROVIDER"), LLM_BASE_URL: config.get("LLM_BASE_URL") };
  const currentPreset = presetOf(current);
  // --provider takes a preset, or any dialect name (azure, mistral, groq, …) for a URL of one's own.
  const dialect = options.provider !== undefined && presetById(options.provider) === undefined ? options.provider : undefined;
  if (dialect !== undefined && !(PROVIDER_NAMES as readonly string[]).includes(dialect)) {
    throw new StepFailedError(`--provider ${dialect}: not a preset (${PRESETS.map((preset) => preset.id).join(", ")}) nor a dialect (${PROVIDER_NAMES.join(", ")})`, 2);
  }
  const presetId = dialect !== undefined ? "custom" : options.provider ?? await ask.select("Which model provider?", PRESETS.map((preset) => ({ value: preset.id, name: preset.label })), currentPreset?.id ?? "openai", "--provider");
  const preset = presetById(presetId) ?? PRESETS[0]!;
  const kept = currentPreset?.id === preset.id;
  const baseUrl = options.baseUrl ?? await ask.input("Base URL of its OpenAI-compatible API", (kept ? current.LLM_BASE_URL : undefined) ?? preset.baseUrl, "--base-url", isUrl);
  const urlProblem = isUrl(baseUrl);
  if (urlProblem !== true) throw new StepFailedError(`--base-url ${baseUrl}: not ${urlProblem}`, 2);
  let provider: ProviderName | undefined = (dialect as ProviderName | undefined) ?? preset.provider;
  if (preset.id === "custom" && dialect === undefined) {
    const detected = detectProvider(baseUrl);
    const chosen = await ask.select("Which dialect does it speak? (what it accepts and wants back; detected from the URL)", PROVIDER_NAMES.map((name) => ({ value: name, name })), (current.LLM_PROVIDER as ProviderName | undefined) ?? detected, "--provider");
    provider = chosen === detected ? undefined : chosen;
  }
  const suggested = (kept ? config.get("LLM_MODEL") : undefined) ?? preset.model ?? (options.model === undefined ? await firstServedModel(baseUrl) : undefined);
  const model = options.model ?? await ask.input("Model", suggested, "--model", (value) => (value.trim() === "" ? "a model name" : true));
  const existingWindow = kept ? config.get("LLM_CONTEXT_WINDOW") : undefined;
  const contextWindow = options.contextWindow ?? (preset.local
    ? await ask.input("Context window the server runs with, in tokens (empty: the model's known window)", existingWindow ?? "8192", "--context-window", isWindow)
    : existingWindow);
  if (contextWindow !== undefined && isWindow(contextWindow) !== true) throw new StepFailedError(`--context-window ${contextWindow}: not a number of tokens`, 2);
  return { preset, provider, baseUrl, model: model.trim(), contextWindow: contextWindow === "" ? undefined : contextWindow };
}

/**
 * The first model a server lists (GET /models): vLLM answers only to the name it serves, and a
 * local server is asked before any key. Undefined when it lists none or does not answer.
 */
async function firstServedModel(baseUrl: string): Promise<string | undefined> {
  try {
    const response = await fetch(`${baseUrl.replace(/\/+$/, "")}/models`, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { data?: Array<{ id?: unknown }> };
    const id = body.data?.[0]?.id;
    return typeof id === "string" && id !== "" ? id : undefined;
  } catch {
    return undefined;
  }
}

async function keyAndCheck(ask: Asker, options: ModelOptions, settings: ModelSettings, existingKey: string | undefined, env: NodeJS.ProcessEnv): Promise<ModelChoice | "again"> {
  let fromVariable: string | undefined;
  if (options.apiKeyEnv !== undefined) {
    fromVariable = env[options.apiKeyEnv];
    if (!fromVariable) throw new StepFailedError(`--api-key-env ${options.apiKeyEnv}: that variable is not set`, 2);
  }
  for (;;) {
    let apiKey = fromVariable;
    if (apiKey === undefined) {
      const hint = settings.preset.keyHint ? ` (${settings.preset.keyHint})` : "";
      const keep = existingKey ? "Enter keeps the one in .env" : settings.preset.needsKey ? "" : "Enter for none";
      const typed = await ask.secret(`API key${hint}${keep ? `; ${keep}` : ""}:`);
      apiKey = typed.trim() === "" ? existingKey : typed.trim();
    }
    const endpoint: LlmEndpoint = {
      role: "main model", baseUrl: settings.baseUrl, apiKey, model: settings.model,
      ...(settings.provider ? { provider: settings.provider } : {}),
      settings: { url: "LLM_BASE_URL", key: "LLM_API_KEY", model: "LLM_MODEL" },
    };
    ask.say(`Testing ${settings.model} with one completion…`);
    const check = await checkCompletion(endpoint, options.timeoutMs);
    ask.say(formatResult(check, { color: false }));
    const choice: ModelChoice = { provider: settings.provider, baseUrl: settings.baseUrl, model: settings.model, contextWindow: settings.contextWindow, apiKey, check };
    if (check.status === "ok" || check.status === "warn") return choice;
    if (!ask.interactive) throw new StepFailedError(`the model check failed: ${check.detail}`, 4);
    const next = await ask.select("What now?", [
      { value: "key", name: "Enter the key again" },
      { value: "again", name: "Choose the provider, URL or model again" },
      { value: "keep", name: "Save these settings anyway (npm run doctor checks them later)" },
      { value: "quit", name: "Quit without saving" },
    ] as const, "key", "");
    if (next === "keep") return choice;
    if (next === "again") return "again";
    if (next === "quit") throw new StepFailedError("quit without saving", 1);
    fromVariable = undefined;
  }
}
