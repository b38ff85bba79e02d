/**
 * Which budget pays for the LLM calls of a turn. A turn makes one scope (the chat, and the user
 * whose message is answered) and hands it down with every call it makes, as it hands down its
 * abort signal: `ChatRequest.budget`, the compaction scope (summarizer, memory flush), the media
 * scope (transcription). Every client of the worker is wrapped by `meteredClient`, which charges
 * a request's budget; a request without one is not metered. No AsyncLocalStorage: an active one
 * turns on promise hooks for the whole process, and every promise of every turn pays for them.
 */
import type { CallBudget, ChatRequest, ChatResult, LlmClient, TokenUsage } from "../core/llm.js";
import { imageTokens } from "../context/image-tokens.js";
import type { Prices } from "../models/catalogue.js";
import { markStage } from "../core/stages.js";
import { unlimited, type BudgetAccounts, type BudgetMeter, type Cost } from "./meter.js";

export class BudgetScope implements CallBudget {
  readonly meter: BudgetMeter;
  /** Changed between the segments of a batch (each answers its own speaker). */
  accounts: BudgetAccounts;
  /** Warnings due (50/75/90%), taken by the next reply. */
  readonly warnings: string[] = [];

  constructor(meter: BudgetMeter, accounts: BudgetAccounts) {
    this.meter = meter;
    this.accounts = accounts;
  }

  /** From now on this scope's calls are paid by `accounts` (the next segment's speaker). */
  payFrom(accounts: BudgetAccounts): void {
    this.accounts = accounts;
  }

  /** Warnings collected so far; each is returned once. */
  takeWarnings(): string[] {
    return this.warnings.splice(0);
  }

  /**
   * Runs one paid call: reserves `estimate` (throwing BudgetExhaustedError when it does not fit,
   * before anything is spent), runs `call`, settles what `actual` says it cost (nothing when the
   * call failed). Where the reservation found no limit at all (most deployments), the settle is
   * sent and not waited for: it can only count (`BudgetMeter.settleUnawaited`).
   */
  async pay<T>(estimate: Cost, call: () => Promise<T>, actual: (result: T) => Cost): Promise<T> {
    const reservation = await this.meter.reserve(this.accounts, estimate);
    markStage("reserved", this.accounts.chat);
    const limited = !unlimited(reservation);
    let result: T;
    try {
      result = await call();
      markStage("answered", this.accounts.chat);
    } catch (error) {
      if (limited) await this.meter.settle(reservation, NOTHING);
      throw error;
    }
    if (!limited) this.meter.settleUnawaited(reservation, actual(result));
    else this.warnings.push(...(await this.meter.settle(reservation, actual(result))));
    markStage("settled", this.accounts.chat);
    return result;
  }
}

const NOTHING: Cost = { usd: 0, tokens: 0 };

/**
 * Deliberately high: ~3 characters a token over the request's text (its framing, tool calls
 * and tools included), each picture at the most a server charges for one, and the whole
 * `max_tokens` of output, so a reservation covers what the call can cost. The messages are
 * walked, not serialized: this runs before every call, and a picture's data URL is megabytes.
 */
export function estimateCost(request: ChatRequest, prices: Prices, defaultMaxOutputTokens: number): Cost {
  let characters = request.tools ? JSON.stringify(request.tools).length : 0;
  let pictures = 0;
  for (const message of request.messages) {
    characters += MESSAGE_FRAME_CHARS;
    if (typeof message.content === "string") characters += message.content.length;
    else if (Array.isArray(message.content)) {
      for (const part of message.content) {
        if (part.type === "text") characters += part.text.length + PART_FRAME_CHARS;
        else pictures++;
      }
    }
    if ("tool_call_id" in message) characters += message.tool_call_id.length;
    if ("tool_calls" in message) {
      for (const call of message.tool_calls ?? []) characters += call.id.length + call.function.name.length + call.function.arguments.length + CALL_FRAME_CHARS;
    }
  }
  const input = Math.ceil(characters / 3) + pictures * MAX_PICTURE_TOKENS;
  const output = request.maxTokens ?? defaultMaxOutputTokens;
  return { tokens: input + output, usd: (input * prices.input + output * prices.output) / 1_000_000 };
}

/** What a message's JSON adds around its content (`{"role":"assistant","content":…}`), a text part's, a tool call's. */
const MESSAGE_FRAME_CHARS = 40;
const PART_FRAME_CHARS = 24;
const CALL_FRAME_CHARS = 64;
/**
 * The largest charge for one picture at high detail by OpenAI's tile formula (context/image-tokens.ts):
 * 768×2048 after scaling, 8 tiles of 170 tokens plus 85.
 */
const MAX_PICTURE_TOKENS = imageTokens(768, 2048, "high");

export function costOfUsage(usage: TokenUsage, prices: Prices): Cost {
  const uncached = Math.max(0, usage.promptTokens - usage.cachedTokens);
  return {
    tokens: usage.promptTokens + usage.completionTokens,
    usd: (uncached * prices.input + usage.cachedTokens * prices.cachedInput + usage.completionTokens * prices.output) / 1_000_000,
  };
}

/**
 * A transcription: its minutes at TRANSCRIBE_PRICE_PER_MINUTE, and its transcript's tokens
 * (~4 characters each) for token budgets. The length is the platform's `duration` when it gave
 * one, else the transcript's, at 150 words a minute.
 */
export function transcriptionCost(audio: { durationS?: number }, transcript: string, pricePerMinute: number): Cost {
  const words = transcript.split(/\s+/).filter((word) => word !== "").length;
  const seconds = audio.durationS ?? (words / 150) * 60;
  return { usd: (seconds / 60) * pricePerMinute, tokens: Math.ceil(transcript.length / 4) };
}

/**
 * What a transcription is reserved at before the call: its length, or unknown, the length its size
 * would play at 16 kbit/s (a voice note's Opus; most other audio is denser, so this errs high), and
 * the tokens of what that much speech transcribes to.
 */
export function transcriptionEstimate(audio: { bytes: number; durationS?: number }, pricePerMinute: number): Cost {
  const seconds = audio.durationS ?? audio.bytes / 2_000;
  // 150 words a minute, ~6 characters a word with its space, ~4 characters a token.
  return { usd: (seconds / 60) * pricePerMinute, tokens: Math.ceil((seconds / 60) * 150 * 1.5) };
}

/**
 * A voice reply's speech: its characters at TTS_PRICE_PER_MILLION_CHARS (known before the call,
 * so the estimate is the cost), and ~4 characters a token of what the endpoint read, for token
 * budgets.
 */
export function speechCost(characters: number, pricePerMillionChars: number): Cost {
  return { usd: (characters * pricePerMillionChars) / 1_000_000, tokens: Math.ceil(characters / 4) };
}

/** A client whose every call is paid from its request's budget (`ChatRequest.budget`). */
export function meteredClient<C extends LlmClient & { learnContextWindow(window: number): void }>(client: C, prices: Prices, defaultMaxOutputTokens: number): C {
  const wrapped: LlmClient & { learnContextWindow(window: number): void } = {
    get model() {
      return client.model;
    },
    get contextWindow() {
      return client.contextWindow;
    },
    learnContextWindow: (window) => client.learnContextWindow(window),
    complete: (request: ChatRequest): Promise<ChatResult> => {
      // A call outside a turn's budget is not metered: no estimate either.
      const budget = request.budget;
      if (!budget) return client.complete(request);
      const estimate = estimateCost(request, prices, defaultMaxOutputTokens);
      // A server that reports no usage is charged the estimate.
      return budget.pay(estimate, () => client.complete(request), (result) => (result.usage ? costOfUsage(result.usage, prices) : estimate));
    },
  };
  return wrapped as C;
}
