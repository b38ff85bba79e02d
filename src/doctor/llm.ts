/**
 * LLM checks: the endpoint answers with the key (GET /models), serves the model, and completes
 * one token through the same client the worker uses. The summarizer is checked the same way
 * when it has an endpoint or model of its own.
 */
import { mainApiKey, type Config } from "../../config/index.js";
import { classifyLlmError, createLlmClient, detectProvider, type ProviderName } from "../llm/index.js";
import { describeNetworkError, fail, hostOf, ok, skip, warn, type CheckResult } from "./check.js";

export interface LlmEndpoint {
  role: "main model" | "summarizer";
  baseUrl: string;
  apiKey: string | undefined;
  model: string;
  /** LLM_PROVIDER when it applies to this endpoint; unset: detected from the URL. */
  provider?: ProviderName;
  /** The settings that choose it, named in fixes. */
  settings: { url: string; key: string; model: string };
}

/** The endpoints the worker calls: the main model, and the summarizer when it differs (workers/worker-role.ts). */
export function llmEndpoints(config: Config): LlmEndpoint[] {
  const main: LlmEndpoint = {
    role: "main model",
    baseUrl: config.LLM_BASE_URL,
    apiKey: mainApiKey(config),
    model: config.LLM_MODEL,
    ...(config.LLM_PROVIDER ? { provider: config.LLM_PROVIDER } : {}),
    settings: { url: "LLM_BASE_URL", key: config.LLM_API_KEY || !config.OPENAI_API_KEY ? "LLM_API_KEY" : "OPENAI_API_KEY", model: "LLM_MODEL" },
  };
  const summaryUrl = config.SUMMARY_BASE_URL ?? config.LLM_BASE_URL;
  const summaryModel = config.SUMMARY_MODEL ?? config.LLM_MODEL;
  if (summaryUrl === main.baseUrl && summaryModel === main.model) return [main];
  return [main, {
    role: "summarizer",
    baseUrl: summaryUrl,
    apiKey: config.SUMMARY_API_KEY ?? main.apiKey,
    model: summaryModel,
    ...(config.LLM_PROVIDER && summaryUrl === config.LLM_BASE_URL ? { provider: config.LLM_PROVIDER } : {}),
    settings: { url: "SUMMARY_BASE_URL", key: config.SUMMARY_API_KEY ? "SUMMARY_API_KEY" : main.settings.key, model: "SUMMARY_MODEL" },
  }];
}

const UNREACHABLE_FIX = (endpoint: LlmEndpoint) =>
  `start the model server, or set ${endpoint.settings.url} to a reachable OpenAI-compatible endpoint (Ollama: http://127.0.0.1:11434/v1)`;
const KEY_FIX = (endpoint: LlmEndpoint) => `set ${endpoint.settings.key} to a valid key for ${hostOf(endpoint.baseUrl)}`;

/**
 * GET /models with the key. A rejected key or an unreachable server is a failure (`definitive`
 * for the key: start-up refuses on it, since waiting cannot fix it); a server without the
 * route is skipped, and the completion decides.
 */
export async function checkModelList(endpoint: LlmEndpoint, timeoutMs: number): Promise<CheckResult> {
  const host = hostOf(endpoint.baseUrl);
  let response: Response;
  try {
    response = await fetch(`${endpoint.baseUrl.replace(/\/+$/, "")}/models`, {
      headers: endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    return fail("llm", `${endpoint.role}: cannot reach ${host} (${describeNetworkError(error)})`, UNREACHABLE_FIX(endpoint));
  }
  const body = await response.text().catch(() => "");
  if (response.status === 401 || response.status === 403) {
    return { ...fail("llm", `${endpoint.role}: ${host} rejected the key (${response.status}${serverMessage(body, endpoint.apiKey)})`, KEY_FIX(endpoint)), definitive: true };
  }
  if (!response.ok) return skip("llm", `${endpoint.role}: ${host} has no model list (HTTP ${response.status}); the completion check decides`);
  const ids = modelIds(body);
  if (ids === undefined) return skip("llm", `${endpoint.role}: ${host} answered /models with something that is not a model list`);
  if (ids.includes(endpoint.model) || ids.includes(`${endpoint.model}:latest`)) return ok("llm", `${endpoint.role}: ${host} serves ${endpoint.model}`);
  const sample = ids.slice(0, 5).join(", ") + (ids.length > 5 ? `, … (${ids.length})` : "");
  return warn("llm", `${endpoint.role}: ${host} does not list ${endpoint.model} (it lists ${sample || "nothing"})`, `set ${endpoint.settings.model} to a model it serves`);
}

/** One completion of one token through the worker's own client (same parameters, same errors). */
export async function checkCompletion(endpoint: LlmEndpoint, timeoutMs: number): Promise<CheckResult> {
  const host = hostOf(endpoint.baseUrl);
  const client = createLlmClient({
    baseUrl: endpoint.baseUrl,
    ...(endpoint.apiKey ? { apiKey: endpoint.apiKey } : {}),
    model: endpoint.model,
    ...(endpoint.provider ? { provider: endpoint.provider } : {}),
    timeoutMs,
    maxRetries: 0,
  });
  const dialect = endpoint.provider ? `provider ${endpoint.provider}, set by LLM_PROVIDER` : `provider ${detectProvider(endpoint.baseUrl)}, detected from the URL`;
  const started = Date.now();
  try {
    await client.complete({ messages: [{ role: "user", content: "Reply with the word OK." }], maxTokens: 1 });
    return ok("llm", `${endpoint.role}: ${endpoint.model} at ${host} completed a token (${Date.now() - started} ms; ${dialect})`);
  } catch (error) {
    const said = (error instanceof Error ? error.message : String(error)).replace(/^LLM [a-z-]+: /, "");
    const brief = said.length > 140 ? `${said.slice(0, 140)}…` : said;
    const what = `${endpoint.role}: ${endpoint.model} at ${host}`;
    switch (classifyLlmError(error)) {
      case "auth":
        return { ...fail("llm", `${what}: key rejected (${brief})`, KEY_FIX(endpoint)), definitive: true };
      case "connection":
        return fail("llm", `${what}: cannot connect (${describeNetworkError(error)})`, UNREACHABLE_FIX(endpoint));
      case "timeout":
        return fail("llm", `${what}: no answer within ${Math.round(timeoutMs / 1000)} s`, "check the server; a local model may still be loading (try again), or raise LLM_TIMEOUT_MS");
      case "rate-limit":
        return /quota|billing|credit/i.test(said)
          ? fail("llm", `${what}: out of quota (${brief})`, "add credit to this account or use another key")
          : warn("llm", `${what}: rate limited (${brief})`, "wait a minute and run the doctor again; turns are retried after the wait the server asks for");
      case "bad-request":
        return fail("llm", `${what}: request refused (${brief})`, /model/i.test(said)
          ? `set ${endpoint.settings.model} to a model this endpoint serves`
          : `check that ${endpoint.settings.url} is the endpoint's OpenAI-compatible root (it usually ends in /v1)`);
      default:
        return fail("llm", `${what}: failed (${brief})`, "try again; if it persists, check the server's logs");
    }
  }
}

/** Every LLM check: the list first, the completion only when the endpoint answered with the key. */
export async function llmResults(config: Config, timeoutMs: number): Promise<CheckResult[]> {
  const perEndpoint = await Promise.all(llmEndpoints(config).map(async (endpoint) => {
    const listing = await checkModelList(endpoint, Math.min(timeoutMs, 10_000));
    if (listing.status === "fail") return [listing];
    return [listing, await checkCompletion(endpoint, timeoutMs)];
  }));
  return perEndpoint.flat();
}

function modelIds(body: string): string[] | undefined {
  try {
    const parsed = JSON.parse(body) as { data?: unknown; models?: unknown };
    const list = Array.isArray(parsed.data) ? parsed.data : Array.isArray(parsed.models) ? parsed.models : undefined;
    return list?.map((entry: { id?: unknown; name?: unknown }) => String(entry.id ?? entry.name ?? "")).filter((id) => id !== "");
  } catch {
    return undefined;
  }
}

/** The server's own words (`error.message`), short, without the key if it quoted it back. */
function serverMessage(body: string, secret: string | undefined): string {
  let message = "";
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    const found = typeof parsed.error === "string" ? parsed.error : parsed.error?.message ?? parsed.message;
    message = typeof found === "string" ? found : "";
  } catch {
    message = body.trim();
  }
  if (secret && secret.length >= 6) message = message.split(secret).join("[REDACTED]");
  if (message.length > 120) message = `${message.slice(0, 120)}…`;
  return message ? `: ${message}` : "";
}
