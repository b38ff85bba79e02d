/**
 * One worker's clients for the catalogue: each model gets its LLM client, its summarizer and its
 * context-engine binding on first use, so the compaction thresholds follow the active model's
 * window from the very next request (the agent's `activeEngine` picks a session's).
 */
import type { Config } from "../../config/index.js";
import { mainApiKey } from "../../config/index.js";
import { createContextManager, type ContextHooks, type ContextManager, type ContextSettings } from "../session-context/index.js";
import type { LlmClient } from "../core/llm.js";
import type { ToolDefinition } from "../core/messages.js";
import { createLlmClient, createSummarizer, type OpenAiLlmClient, type Summarizer } from "../llm/index.js";
import { CallGate, limitedClient, type CallLimits } from "../llm/limits.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import { catalogueFromConfig, type CatalogueModel, type ModelCatalogue, type Prices } from "./catalogue.js";

export interface BoundModel {
  model: CatalogueModel;
  llm: LlmClient;
  context: ContextManager;
}

export interface ModelRouter {
  catalogue: ModelCatalogue;
  bind(model: CatalogueModel): BoundModel;
  /** The (metered) summarizer of a model's conversations, without binding its context engine. */
  summarizer(model: CatalogueModel): Summarizer;
}

/** What wraps every client (budget metering): `role` says which budget line the calls count as. */
export type ClientWrapper = (client: OpenAiLlmClient, prices: Prices, role: "main" | "summarizer") => OpenAiLlmClient;

export interface ModelRouterOptions {
  config: Config;
  logger: Logger;
  metrics?: Metrics;
  tools: () => ToolDefinition[];
  wrap?: ClientWrapper;
  /** The context engine's hooks for a model (memory flush), given its metered client. */
  hooks?: (llm: OpenAiLlmClient) => ContextHooks;
  /** Wraps the main client the agent loop uses (the vision gate); the context engine gets the plain one. */
  wrapMain?: (llm: OpenAiLlmClient) => OpenAiLlmClient;
  /** Tests shorten the summarizer's retry delays. */
  retry?: { attempts?: number; baseDelayMs?: number; timeoutMs?: number };
}

export function createModelRouter(options: ModelRouterOptions): ModelRouter {
  const { config, logger } = options;
  const catalogue = catalogueFromConfig(config);
  const wrap: ClientWrapper = options.wrap ?? ((client) => client);
  const settings: ContextSettings = {
    hygieneThreshold: config.HYGIENE_THRESHOLD,
    compactionThreshold: config.COMPACTION_THRESHOLD,
    targetRatio: config.COMPACTION_TARGET_RATIO,
    protectLastN: config.PROTECT_LAST_N,
    replyTokens: config.LLM_MAX_OUTPUT_TOKENS,
  };
  const clients = new Map<string, OpenAiLlmClient>();
  const bound = new Map<string, BoundModel>();
  let globalSummary: OpenAiLlmClient | undefined;

  // The provider's limits (src/llm/limits.ts): one gate per endpoint, shared by every model on
  // it (a 429 pauses them all), and one per model with caps of its own.
  const gates = new Map<string, CallGate>();
  const gate = (key: string, limits: CallLimits, what: Record<string, string>): CallGate => {
    let found = gates.get(key);
    if (!found) {
      found = new CallGate(limits, { onPause: (pauseMs) => logger.warn({ ...what, pauseMs }, "llm-rate-limited-pausing") });
      gates.set(key, found);
    }
    return found;
  };
  const endpointGate = (baseUrl: string) => gate(`endpoint:${baseUrl}`, catalogue.endpointLimits[baseUrl.replace(/\/+$/, "")] ?? {}, { endpoint: new URL(baseUrl).host });
  const gatesFor = (model: CatalogueModel, baseUrl: string): CallGate[] => [
    ...(model.limits ? [gate(`model:${model.name}`, model.limits, { model: model.name })] : []),
    endpointGate(baseUrl),
  ];

  const rawClient = (model: CatalogueModel): OpenAiLlmClient => {
    let client = clients.get(model.name);
    if (!client) {
      const defaultEndpoint = model.endpoint === undefined || model.endpoint === config.LLM_BASE_URL;
      const apiKey = model.apiKey ?? (defaultEndpoint ? mainApiKey(config) : undefined);
      const provider = model.provider ?? (defaultEndpoint ? config.LLM_PROVIDER : undefined);
      const baseUrl = model.endpoint ?? config.LLM_BASE_URL;
      client = limitedClient(createLlmClient({
        baseUrl,
        ...(provider ? { provider } : {}),
        ...(apiKey ? { apiKey } : {}),
        model: model.id,
        ...(model.contextWindow ? { contextWindow: model.contextWindow } : {}),
        timeoutMs: config.LLM_TIMEOUT_MS,
        maxRetries: config.LLM_MAX_RETRIES,
        maxOutputTokens: config.LLM_MAX_OUTPUT_TOKENS,
        logger,
        ...(config.LLM_ALTERNATE_ROLES ? { alternateRoles: true } : {}),
      }), gatesFor(model, baseUrl));
      clients.set(model.name, client);
    }
    return client;
  };

  /** SUMMARY_MODEL / SUMMARY_BASE_URL, as configured before the catalogue existed. */
  const summaryClient = (): OpenAiLlmClient => {
    if (!globalSummary) {
      const apiKey = config.SUMMARY_API_KEY ?? mainApiKey(config);
      const model = config.SUMMARY_MODEL ?? config.LLM_MODEL;
      const baseUrl = config.SUMMARY_BASE_URL ?? config.LLM_BASE_URL;
      globalSummary = limitedClient(createLlmClient({
        baseUrl,
        ...(config.LLM_PROVIDER && baseUrl === config.LLM_BASE_URL ? { provider: config.LLM_PROVIDER } : {}),
        ...(apiKey ? { apiKey } : {}),
        model,
        ...(config.SUMMARY_CONTEXT_WINDOW ? { contextWindow: config.SUMMARY_CONTEXT_WINDOW } : {}),
        timeoutMs: config.LLM_TIMEOUT_MS,
        maxRetries: config.LLM_MAX_RETRIES,
        logger,
      }), [endpointGate(baseUrl)]);
    }
    return globalSummary;
  };

  /**
   * The model's own `summarizer`, else SUMMARY_* when it names another model or endpoint (or a
   * window of its own), else the model itself.
   */
  const summarizerFor = (model: CatalogueModel): { client: OpenAiLlmClient; prices: Prices } => {
    if (model.summarizer !== undefined) {
      const other = catalogue.find(model.summarizer) ?? model;
      return { client: rawClient(other), prices: other.prices };
    }
    const summaryModel = config.SUMMARY_MODEL ?? model.id;
    const summaryEndpoint = config.SUMMARY_BASE_URL ?? config.LLM_BASE_URL;
    const separate = summaryModel !== model.id || summaryEndpoint !== (model.endpoint ?? config.LLM_BASE_URL) || config.SUMMARY_CONTEXT_WINDOW !== undefined;
    // SUMMARY_* has no prices of its own: the summary model's catalogue entry if it has one.
    if (separate) return { client: summaryClient(), prices: catalogue.models.find((entry) => entry.id === config.SUMMARY_MODEL)?.prices ?? model.prices };
    return { client: rawClient(model), prices: model.prices };
  };

  const summarizers = new Map<string, Summarizer>();
  const summarizer = (model: CatalogueModel): Summarizer => {
    let result = summarizers.get(model.name);
    if (!result) {
      const summary = summarizerFor(model);
      result = createSummarizer(wrap(summary.client, summary.prices, "summarizer"));
      summarizers.set(model.name, result);
    }
    return result;
  };

  return {
    catalogue,
    summarizer,
    bind(model) {
      let result = bound.get(model.name);
      if (!result) {
        const main = wrap(rawClient(model), model.prices, "main");
        const sameClient = summarizerFor(model).client === rawClient(model);
        const context = createContextManager({
          llm: main,
          summarizer: summarizer(model),
          // The main model takes over when a separate summarizer fails.
          fallbackSummarizer: sameClient ? undefined : createSummarizer(wrap(rawClient(model), model.prices, "summarizer")),
          settings,
          tools: options.tools,
          ...(options.metrics ? { metrics: options.metrics } : {}),
          ...(options.retry ? { retry: options.retry } : {}),
          ...(options.hooks ? { hooks: options.hooks(main) } : {}),
        });
        result = { model, llm: options.wrapMain ? options.wrapMain(main) : main, context };
        bound.set(model.name, result);
      }
      return result;
    },
  };
}
