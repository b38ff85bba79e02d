/**
 * `npm run eval` (issue #17, item 5): plays the dialogue into a session's live context as the
 * worker builds it (system prompt with the persona, user messages through `toUserMessages` with
 * their time stamps and speaker names), forces a compaction after the chosen days through the
 * model's real context binding (the router's `bind`: compact(), the summary prompt, the
 * summarizer client, the main model as fallback), then asks each probe to the main model over
 * the compacted context with the request a turn sends (`prepareRequest`), and scores the answers.
 *
 * The dialogue's assistant turns are scripted: only compactions and probes call a model, so two
 * runs read the same conversation. Probes are sent without tools: the eval measures what the
 * compacted context holds, not what `recall` can fetch back. One column per summarizer.
 */
import type { Config } from "../../config/index.js";
import { toUserMessages, type CompactionScope } from "../agent/index.js";
import { costOfUsage } from "../budget/index.js";
import type { ChatRequest, WireMessage } from "../core/llm.js";
import type { ChatMessage } from "../core/messages.js";
import type { OpenAiLlmClient } from "../llm/index.js";
import { silentLogger, type Logger } from "../logger.js";
import { catalogueFromConfig, type Prices } from "../models/catalogue.js";
import { withPersona } from "../models/persona.js";
import { createModelRouter } from "../models/router.js";
import type { InboxEntry } from "../session/store.js";
import { newSessionState, type SessionState } from "../session/state.js";
import { PROBE_CATEGORIES, type Dialogue, type Probe, type ProbeCategory } from "./dialogue.js";
import { scoreAnswer } from "./score.js";

/** Appended to every probe question. */
export const PROBE_INSTRUCTION =
  "Answer briefly, from what you know of this conversation. Where something changed, give only the current value.";

export interface EvalOptions {
  config: Config;
  dialogue: Dialogue;
  /** Catalogue name (or alias) of the main model; unset: the catalogue's default. */
  model?: string;
  /** One column each: a catalogue model (or, without a `models:` section, a model id for SUMMARY_MODEL). Unset: as configured. */
  summarizers?: readonly string[];
  /**
   * Summary-prompt variants, each a column (crossed with the summarizers): `system` replaces the
   * system message of every summary request (`{length}` in it becomes the length the engine asks
   * for, "about N tokens"); no `system`: the built-in prompt.
   */
  prompts?: ReadonlyArray<{ label: string; system?: string }>;
  /** 1-based days after which a compaction is forced. */
  compactAfterDays: readonly number[];
  logger?: Logger;
  /** A line per step (compaction, probe), for a terminal. */
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface ModelUsage {
  role: "main" | "summarizer";
  model: string;
  calls: number;
  promptTokens: number;
  completionTokens: number;
  /** At the catalogue's prices; 0 when it has none. */
  usd: number;
  /** Answers without a `usage` object (their tokens are not in the totals). */
  unreported: number;
}

export interface CompactionOutcome {
  afterDay: number;
  date: string;
  messagesBefore: number;
  messagesAfter: number;
  tokensBefore: number;
  tokensAfter: number;
}

export interface ProbeResult {
  id: string;
  category: ProbeCategory;
  question: string;
  answer: string;
  pass: boolean;
  missing: string[];
  rejected: string[];
  /** The probe got no usable answer: the model failed or answered nothing. Fails the run. */
  error?: string;
}

export interface ColumnResult {
  /** What `--summarizer` named (or "configured"), then `/` and the prompt variant's label when there are variants. */
  label: string;
  /** The prompt variant's label; undefined: the built-in prompt, no variants compared. */
  prompt?: string;
  mainModel: string;
  summarizerModel: string;
  compactions: CompactionOutcome[];
  /** Tokens of the context the probes were asked over (before the question). */
  finalContextTokens: number;
  finalContextMessages: number;
  probes: ProbeResult[];
  usage: ModelUsage[];
}

export interface EvalResult {
  dialogue: string;
  messages: number;
  days: number;
  compactAfterDays: number[];
  columns: ColumnResult[];
}

/** The run cannot go on (a compaction failed): nothing after it would measure anything. */
export class EvalError extends Error {
  override readonly name = "EvalError";
}

/** A wrong option (an unknown model name, a day the dialogue does not have). */
export class EvalUsageError extends Error {
  override readonly name = "EvalUsageError";
}

export async function runEval(options: EvalOptions): Promise<EvalResult> {
  const { dialogue } = options;
  const days = [...new Set(options.compactAfterDays)].sort((a, b) => a - b);
  for (const day of days) {
    if (!Number.isInteger(day) || day < 1 || day > dialogue.days.length) {
      throw new EvalUsageError(`compaction after day ${day}: the dialogue has days 1 to ${dialogue.days.length}`);
    }
  }
  const catalogue = catalogueFromConfig(options.config);
  const main = options.model === undefined ? catalogue.default : catalogue.find(options.model);
  if (!main) throw new EvalUsageError(`--model ${options.model}: no such model in the catalogue (${catalogue.models.map((model) => model.name).join(", ")})`);
  const summarizers = options.summarizers?.length ? options.summarizers.map((name) => ({ label: name, config: withSummarizer(options.config, main.name, name) })) : [{ label: "configured", config: options.config }];
  const prompts = options.prompts?.length ? options.prompts : [undefined];
  const columns: ColumnResult[] = [];
  for (const summarizer of summarizers) {
    for (const prompt of prompts) {
      const label = prompt ? `${summarizer.label}/${prompt.label}` : summarizer.label;
      columns.push(await runColumn({ ...options, compactAfterDays: days }, { label, config: summarizer.config, ...(prompt ? { prompt } : {}) }, main.name));
    }
  }
  return {
    dialogue: dialogue.name,
    messages: dialogue.days.reduce((sum, day) => sum + day.messages.length, 0),
    days: dialogue.days.length,
    compactAfterDays: days,
    columns,
  };
}

/** The configuration with `summarizer` compacting the main model's conversations. */
export function withSummarizer(config: Config, mainName: string, summarizer: string): Config {
  if (!config.models) return { ...config, SUMMARY_MODEL: summarizer };
  const catalogue = catalogueFromConfig(config);
  const target = catalogue.find(summarizer);
  if (!target) throw new EvalUsageError(`--summarizer ${summarizer}: no such model in the catalogue (${catalogue.models.map((model) => model.name).join(", ")})`);
  const entry = config.models.list[mainName]!;
  return { ...config, models: { ...config.models, list: { ...config.models.list, [mainName]: { ...entry, summarizer: target.name } } } };
}

interface ColumnSpec {
  label: string;
  config: Config;
  prompt?: { label: string; system?: string };
}

async function runColumn(options: EvalOptions, column: ColumnSpec, mainName: string): Promise<ColumnResult> {
  const { dialogue } = options;
  const { label, config, prompt } = column;
  const log = options.logger ?? silentLogger;
  const progress = (line: string) => options.onProgress?.(`[${label}] ${line}`);
  const usage = new Map<string, ModelUsage>();
  const router = createModelRouter({
    config,
    logger: log,
    tools: () => [],
    wrap: (client, prices, role) => counted(role === "summarizer" && prompt?.system !== undefined ? withSystemPrompt(client, prompt.system) : client, prices, role, usage),
  });
  const model = router.catalogue.find(mainName)!;
  const bound = router.bind(model);
  const summarizerModel = router.summarizer(model).model;

  const first = dialogue.days[0]!.messages[0]!;
  const state = newSessionState(first.at);
  const newId = () => `m${state.nextSeq++}`;
  state.live.push({ id: newId(), at: first.at, role: "system", content: withPersona(config.SYSTEM_PROMPT, state) });
  const asker = dialogue.days.flatMap((day) => day.messages).find((message) => !message.fromAssistant)?.speaker ?? "user";
  const scope: CompactionScope = {
    signal: options.signal ?? new AbortController().signal,
    log,
    newId,
    addToTranscript: () => {},
    timeZone: dialogue.timeZone,
  };

  const compactions: CompactionOutcome[] = [];
  for (const [index, day] of dialogue.days.entries()) {
    for (const message of day.messages) {
      state.live.push(
        message.fromAssistant
          ? { id: newId(), at: message.at, role: "assistant", content: message.text }
          : userMessage(state, dialogue, message.speaker, message.text, message.at, newId),
      );
    }
    if (!options.compactAfterDays.includes(index + 1)) continue;
    const before = { messages: state.live.length, tokens: bound.context.countContext(state, state.live, []), compactions: state.stats.compactions };
    const { context, summary } = await bound.context.compactNow(state, state.live, undefined, scope);
    if (state.stats.compactions === before.compactions || !context.some((message) => message.kind === "summary")) {
      throw new EvalError(`the compaction after day ${index + 1} (${day.date}) did not compact: ${summary}`);
    }
    const fallback = summarizerModel !== model.id ? usage.get(`summarizer:${model.id}`) : undefined;
    if (fallback && fallback.calls > 0) {
      throw new EvalError(`the summarizer ${summarizerModel} failed in the compaction after day ${index + 1} (${day.date}) and the main model ${model.id} wrote the summary instead; this column would not measure ${summarizerModel} (npm run doctor checks its endpoint)`);
    }
    state.live = context;
    const outcome: CompactionOutcome = {
      afterDay: index + 1,
      date: day.date,
      messagesBefore: before.messages,
      messagesAfter: context.length,
      tokensBefore: before.tokens,
      tokensAfter: bound.context.countContext(state, context, []),
    };
    compactions.push(outcome);
    progress(`compacted after day ${outcome.afterDay}: ${outcome.messagesBefore} → ${outcome.messagesAfter} messages, ${outcome.tokensBefore} → ${outcome.tokensAfter} tokens`);
  }

  const probes: ProbeResult[] = [];
  for (const probe of dialogue.probes) {
    options.signal?.throwIfAborted();
    const question = userMessage(state, dialogue, asker, `${probe.question} ${PROBE_INSTRUCTION}`, dialogue.probeAt, newId);
    const request = bound.context.prepareRequest(state, [...state.live, question]);
    const result = await askProbe(bound.llm, probe, request, config.LLM_MAX_OUTPUT_TOKENS, options.signal);
    probes.push(result);
    progress(`${result.error ? "ERROR" : result.pass ? "pass " : "FAIL "} ${probe.id}`);
  }
  return {
    label,
    ...(prompt ? { prompt: prompt.label } : {}),
    mainModel: model.id,
    summarizerModel,
    compactions,
    finalContextTokens: bound.context.countContext(state, state.live, []),
    finalContextMessages: state.live.length,
    probes,
    usage: [...usage.values()],
  };
}

/** A person's message as a turn stores it: speaker name in a group, the send time stamped in front. */
function userMessage(state: SessionState, dialogue: Dialogue, speaker: string, text: string, at: number, newId: () => string): ChatMessage {
  const previousAt = state.live.findLast((message) => message.role !== "system" && message.at !== undefined)?.at;
  const entry: InboxEntry = {
    platform: "console",
    sessionKey: `console:eval-${dialogue.name}`,
    messageId: `eval-${at}`,
    chatId: `eval-${dialogue.name}`,
    userId: speaker,
    userName: speaker,
    chatType: dialogue.chatType,
    text,
    sentAt: at,
    receivedAt: at,
  };
  return toUserMessages([entry], newId, { timeZone: dialogue.timeZone, ...(previousAt === undefined ? {} : { previousAt }) })[0]!;
}

/** Reasoning a model writes inline is not its answer (a `<think>` cut short at max_tokens included). */
const THINKING = /<think>[\s\S]*?(<\/think>|$)/g;

async function askProbe(
  llm: Pick<OpenAiLlmClient, "complete">,
  probe: Probe,
  request: Pick<ChatRequest, "messages" | "promptCacheKey">,
  maxTokens: number,
  signal: AbortSignal | undefined,
): Promise<ProbeResult> {
  const base = { id: probe.id, category: probe.category, question: probe.question };
  let answer: string;
  try {
    const result = await llm.complete({
      messages: request.messages,
      maxTokens,
      ...(request.promptCacheKey ? { promptCacheKey: request.promptCacheKey } : {}),
      ...(signal ? { signal } : {}),
    });
    answer = (result.content ?? "").replace(THINKING, "").trim();
    if (answer === "") {
      const why = result.toolCalls.length > 0 ? `it called ${result.toolCalls.map((call) => call.function.name).join(", ")} instead of answering` : `finish_reason ${result.finishReason ?? "none"}`;
      return { ...base, answer: "", pass: false, missing: probe.items.map((item) => item[0]!), rejected: [], error: `empty answer (${why})` };
    }
  } catch (error) {
    signal?.throwIfAborted();
    return { ...base, answer: "", pass: false, missing: probe.items.map((item) => item[0]!), rejected: [], error: `the model failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  return { ...base, answer, ...scoreAnswer(probe, answer) };
}

/** How the engine states the summary's length ("about 2000 tokens"): a variant's `{length}`. */
const LENGTH = /\babout \d+ tokens\b/;

/** A summarizer client whose requests carry `system` instead of the built-in system prompt. */
function withSystemPrompt(client: OpenAiLlmClient, system: string): OpenAiLlmClient {
  return new Proxy(client, {
    get: (target, property, receiver) => {
      if (property !== "complete") return Reflect.get(target, property, receiver);
      return (request: ChatRequest) => {
        const [first, ...rest] = request.messages;
        const original = typeof first?.content === "string" ? first.content : undefined;
        if (first?.role !== "system" || original === undefined) throw new EvalError("a summary request did not start with its system prompt");
        const length = LENGTH.exec(original)?.[0];
        if (length === undefined && system.includes("{length}")) throw new EvalError('the summary prompt no longer states its length as "about N tokens"; {length} cannot be filled');
        const replaced: WireMessage = { role: "system", content: system.replaceAll("{length}", length ?? "") };
        return target.complete({ ...request, messages: [replaced, ...rest] });
      };
    },
  });
}

/** Counts every call a client makes, by role and model. */
function counted(client: OpenAiLlmClient, prices: Prices, role: "main" | "summarizer", usage: Map<string, ModelUsage>): OpenAiLlmClient {
  return {
    get model() {
      return client.model;
    },
    get contextWindow() {
      return client.contextWindow;
    },
    learnContextWindow: (window) => client.learnContextWindow(window),
    async complete(request) {
      const key = `${role}:${client.model}`;
      let totals = usage.get(key);
      if (!totals) {
        totals = { role, model: client.model, calls: 0, promptTokens: 0, completionTokens: 0, usd: 0, unreported: 0 };
        usage.set(key, totals);
      }
      totals.calls += 1;
      const result = await client.complete(request);
      if (result.usage) {
        totals.promptTokens += result.usage.promptTokens;
        totals.completionTokens += result.usage.completionTokens;
        totals.usd += costOfUsage(result.usage, prices).usd;
      } else totals.unreported += 1;
      return result;
    },
  };
}

export interface CategoryScore {
  category: ProbeCategory | "overall";
  passed: number;
  total: number;
}

/** Pass counts per category (those the dialogue has), then overall. */
export function categoryScores(column: Pick<ColumnResult, "probes">): CategoryScore[] {
  const rows: CategoryScore[] = [];
  for (const category of PROBE_CATEGORIES) {
    const probes = column.probes.filter((probe) => probe.category === category);
    if (probes.length > 0) rows.push({ category, passed: probes.filter((probe) => probe.pass).length, total: probes.length });
  }
  rows.push({ category: "overall", passed: column.probes.filter((probe) => probe.pass).length, total: column.probes.length });
  return rows;
}
