/**
 * The model catalogue (issue #17): the models a chat may switch between with `/model`, their
 * windows and prices, and who may pick which. Without a `models:` section the catalogue holds
 * one model built from LLM_* (named after LLM_MODEL), so every path below has one shape.
 */
import type { Config } from "../../config/index.js";
import type { CallLimitsConfig, ModelEntryConfig } from "../../config/operator-sections.js";
import type { ProviderName } from "../llm/index.js";
import type { CallLimits } from "../llm/limits.js";

export interface Prices {
  /** USD per million uncached input tokens. */
  input: number;
  cachedInput: number;
  output: number;
}

export interface CatalogueModel {
  /** The catalogue name (what /model shows and the session stores). */
  name: string;
  /** The model name sent to the endpoint. */
  id: string;
  /** Base URL; undefined: LLM_BASE_URL. */
  endpoint?: string;
  apiKey?: string;
  /** Provider dialect; undefined: LLM_PROVIDER for the default endpoint, else detected from the endpoint. */
  provider?: ProviderName;
  contextWindow?: number;
  prices: Prices;
  /** Whether it takes images; undefined: LLM_VISION decides (auto learns from a refusal). */
  vision?: boolean;
  aliases: readonly string[];
  /** Catalogue name of its summarizer; undefined: SUMMARY_* (or itself). */
  summarizer?: string;
  allow?: { chats: readonly string[]; users: readonly string[] };
  /** The provider's caps on this model's requests (src/llm/limits.ts). */
  limits?: CallLimits;
}

/** Who asks: the chat (session key, and the chat it belongs to) and the user, in `tg:<id>` form. */
export interface ModelRequester {
  chatKeys: readonly string[];
  userKey: string;
  admin: boolean;
}

export class ModelCatalogue {
  readonly defaultName: string;
  private readonly byName = new Map<string, CatalogueModel>();
  private readonly lookup = new Map<string, string>();

  constructor(readonly models: readonly CatalogueModel[], defaultName?: string, /** By base URL without a trailing slash. */ readonly endpointLimits: Readonly<Record<string, CallLimits>> = {}) {
    const first = models[0];
    if (!first) throw new Error("the model catalogue is empty");
    for (const model of models) {
      this.byName.set(model.name, model);
      for (const name of [model.name, ...model.aliases]) this.lookup.set(name.toLowerCase(), model.name);
    }
    this.defaultName = defaultName ?? first.name;
  }

  get default(): CatalogueModel {
    return this.byName.get(this.defaultName)!;
  }

  /** A model by name or alias (case-insensitive). */
  find(nameOrAlias: string): CatalogueModel | undefined {
    const name = this.lookup.get(nameOrAlias.trim().toLowerCase());
    return name === undefined ? undefined : this.byName.get(name);
  }

  /** The session's choice if it still exists in the catalogue, else the default. */
  active(chosen: string | undefined): CatalogueModel {
    return (chosen !== undefined ? this.byName.get(chosen) : undefined) ?? this.default;
  }

  /** What the catalogue says of a model id's vision (the first entry with that id that says anything). */
  visionOf(id: string): boolean | undefined {
    return this.models.find((model) => model.id === id && model.vision !== undefined)?.vision;
  }

  mayUse(model: CatalogueModel, requester: ModelRequester): boolean {
    if (!model.allow || requester.admin || model.name === this.defaultName) return true;
    return requester.chatKeys.some((key) => model.allow!.chats.includes(key)) || model.allow.users.includes(requester.userKey);
  }
}

export function catalogueFromConfig(config: Config): ModelCatalogue {
  const section = config.models;
  if (!section) {
    return new ModelCatalogue([{
      name: config.LLM_MODEL,
      id: config.LLM_MODEL,
      ...(config.LLM_CONTEXT_WINDOW ? { contextWindow: config.LLM_CONTEXT_WINDOW } : {}),
      prices: { input: config.LLM_PRICE_INPUT, cachedInput: config.LLM_PRICE_CACHED_INPUT, output: config.LLM_PRICE_OUTPUT },
      aliases: [],
    }]);
  }
  const endpoints = Object.fromEntries(Object.entries(section.endpoints).map(([url, limits]) => [url.replace(/\/+$/, ""), callLimitsOf(limits)]));
  return new ModelCatalogue(Object.entries(section.list).map(([name, entry]) => toModel(name, entry)), section.default, endpoints);
}

function toModel(name: string, entry: ModelEntryConfig): CatalogueModel {
  const input = entry.prices?.input ?? 0;
  return {
    name,
    id: entry.id,
    ...(entry.endpoint ? { endpoint: entry.endpoint } : {}),
    ...(entry.api_key ? { apiKey: entry.api_key } : {}),
    ...(entry.provider ? { provider: entry.provider } : {}),
    ...(entry.context_window ? { contextWindow: entry.context_window } : {}),
    prices: { input, cachedInput: entry.prices?.cached ?? input, output: entry.prices?.output ?? 0 },
    ...(entry.vision === undefined ? {} : { vision: entry.vision }),
    aliases: entry.aliases,
    ...(entry.summarizer ? { summarizer: entry.summarizer } : {}),
    ...(entry.allow ? { allow: entry.allow } : {}),
    ...(entry.limits ? { limits: callLimitsOf(entry.limits) } : {}),
  };
}

function callLimitsOf(limits: CallLimitsConfig): CallLimits {
  return {
    ...(limits.concurrent === undefined ? {} : { concurrent: limits.concurrent }),
    ...(limits.requests_per_minute === undefined ? {} : { requestsPerMinute: limits.requests_per_minute }),
  };
}
