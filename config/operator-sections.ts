/**
 * The operator's sections of the configuration file (issue #17): the model catalogue, named
 * personas, and budgets.
 *
 *   models:
 *     default: mini
 *     list:
 *       mini:  { id: gpt-4o-mini, context_window: 128000, prices: { input: 0.15, cached: 0.075, output: 0.6 }, aliases: [small] }
 *       local: { id: "llama3.1:8b", endpoint: "http://127.0.0.1:11434/v1", context_window: 8192, summarizer: mini }
 *       smart: { id: gpt-4.1, prices: { input: 2, output: 8 }, vision: true, allow: { users: ["tg:42"] } }
 *       big:   { id: gpt-4.1, limits: { concurrent: 50, requests_per_minute: 500 } }
 *     endpoints:
 *       "http://127.0.0.1:11434/v1": { concurrent: 4 }
 *   personas:
 *     pirate: "Answer like a friendly pirate."
 *   budgets:
 *     user: { daily: { usd: 1 } }
 *     chat: { daily: { usd: 2, tokens: 2000000 }, monthly: { usd: 30 } }
 *     chats: { "tg:-1001234": { daily: { usd: 10 } } }
 *     users: { "tg:42": { monthly: { usd: 100 } } }
 */
import { z } from "zod";
import { LLM_PROVIDERS } from "./schema.js";

/** `tg:<id>`, `dc:<id>` (a Discord channel, or `dc:dm:<user>`), `console:<name>`; the same keys as access.tools. */
const chatKey = z.string().regex(/^(tg|dc|console):.+$/, "tg:<id>, dc:<id> or console:<name>");
const modelName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "letters, digits, '.', '_' and '-' only");

/** A provider's own caps (src/llm/limits.ts); a 429 pauses the requests behind them whatever they say. */
const callLimits = z.strictObject({
  concurrent: z.number().int().positive().optional().describe("Requests in flight at once"),
  requests_per_minute: z.number().int().positive().optional().describe("Requests started per minute, spread evenly"),
});

const modelEntry = z.strictObject({
  id: z.string().min(1).describe("The model name the endpoint knows (sent as `model`)"),
  endpoint: z.url().optional().describe("OpenAI-compatible base URL; unset: LLM_BASE_URL"),
  provider: z.enum(LLM_PROVIDERS).optional().describe("Its provider dialect (as LLM_PROVIDER); unset: LLM_PROVIDER when the endpoint is LLM_BASE_URL, else detected from the endpoint"),
  api_key: z.string().min(1).optional().describe("Its key (as ${VAR}); unset: the main key when the endpoint is the default, else none"),
  context_window: z.number().int().positive().optional().describe("Window in tokens; unset: the table of known models, else 128000"),
  prices: z.strictObject({
    input: z.number().min(0).default(0),
    cached: z.number().min(0).optional(),
    output: z.number().min(0).default(0),
  }).optional().describe("USD per million tokens; cached defaults to input"),
  vision: z.boolean().optional().describe("Accepts images: true sends it pictures, false never (a text placeholder instead); unset: LLM_VISION decides"),
  aliases: z.array(modelName).default([]).describe("Other names /model accepts"),
  summarizer: modelName.optional().describe("Catalogue model that compacts this one's conversations; unset: SUMMARY_* (or this model)"),
  allow: z.strictObject({
    chats: z.array(chatKey).default([]),
    users: z.array(chatKey).default([]),
  }).optional().describe("Who may pick it (a chat listed, or the asking user listed); unset: everyone; admins always"),
  limits: callLimits.optional().describe("Caps on this model's requests (its summaries and memory flushes included); unset: none but the 429 pause"),
});

export const modelsSection = z.strictObject({
  default: modelName.optional().describe("The model chats use until /model picks another; unset: the first in list"),
  list: z.record(modelName, modelEntry).refine((list) => Object.keys(list).length > 0, "at least one model"),
  endpoints: z.record(z.url(), callLimits).default({}).describe("Caps shared by every model on one endpoint (its base URL as the models use it: endpoint, or LLM_BASE_URL)"),
});

export const personasSection = z.record(modelName, z.string().min(1).max(4_000));

const limit = z.strictObject({
  usd: z.number().positive().optional().describe("Money, at the catalogue's prices"),
  tokens: z.number().int().positive().optional().describe("Tokens in + out"),
});
const periods = z.strictObject({ daily: limit.optional(), monthly: limit.optional() });

export const budgetsSection = z.strictObject({
  user: periods.optional().describe("Default budget of every user"),
  chat: periods.optional().describe("Default budget of every chat (session)"),
  users: z.record(chatKey, periods).default({}).describe("Per-user overrides, by tg:<id> / dc:<id>"),
  chats: z.record(chatKey, periods).default({}).describe("Per-chat overrides, by session key"),
});

export type ModelsSection = z.infer<typeof modelsSection>;
export type ModelEntryConfig = ModelsSection["list"][string];
export type PersonasSection = z.infer<typeof personasSection>;
export type BudgetsSection = z.infer<typeof budgetsSection>;
export type BudgetPeriods = z.infer<typeof periods>;
export type BudgetLimit = z.infer<typeof limit>;
export type CallLimitsConfig = z.infer<typeof callLimits>;

/** Names must be unique across models and aliases; summarizers and the default must exist. */
export function checkOperatorSections(sections: { models?: ModelsSection }): string[] {
  const models = sections.models;
  if (!models) return [];
  const lines: string[] = [];
  const owner = new Map<string, string>();
  for (const [name, entry] of Object.entries(models.list)) {
    for (const alias of [name, ...entry.aliases]) {
      const key = alias.toLowerCase();
      const taken = owner.get(key);
      if (taken !== undefined && taken !== name) lines.push(`  models.list.${name}.aliases: "${alias}" is already a name of ${taken}`);
      owner.set(key, name);
    }
  }
  if (models.default !== undefined && !models.list[models.default]) lines.push(`  models.default: no model "${models.default}" in models.list`);
  for (const [name, entry] of Object.entries(models.list)) {
    if (entry.summarizer !== undefined && !models.list[entry.summarizer]) lines.push(`  models.list.${name}.summarizer: no model "${entry.summarizer}" in models.list`);
  }
  return lines;
}
