/**
 * Whether the main model sees pictures (LLM_VISION): `on`, `off`, or `auto` — send them until
 * the model refuses one, then remember the refusal for that model (in Redis, for every worker)
 * and answer with placeholders from then on. A catalogue model's `vision` flag (issue #17) says
 * it for that model: `false` never gets image parts (the placeholder instead), `true` always
 * does; `off` still turns pictures off for all. The gate wraps each main LLM client; the
 * summarizer never gets image parts at all.
 */
import type { ChatRequest, ChatResult, LlmClient } from "../core/llm.js";
import type { Logger } from "../logger.js";
import { hasImageParts, withoutImageParts } from "./images.js";

export type VisionMode = "auto" | "on" | "off";

/** What this deployment learned per model; `false`: the model refused a picture. */
export interface VisionMemory {
  get(model: string): Promise<boolean | undefined>;
  set(model: string, supported: boolean): Promise<void>;
}

export function redisVisionMemory(redis: { get(key: string): Promise<string | null>; set(key: string, value: string): Promise<unknown> }, prefix: string): VisionMemory {
  const key = (model: string) => `${prefix}:vision:${model}`;
  return {
    async get(model) {
      const value = await redis.get(key(model));
      return value === null ? undefined : value === "yes";
    },
    async set(model, supported) {
      await redis.set(key(model), supported ? "yes" : "no");
    },
  };
}

/**
 * How vendors word "this model takes no images" (OpenAI, OpenRouter, vLLM, llama.cpp, Ollama,
 * LM Studio, Groq). Matched against the error and its causes.
 */
const REFUSALS = [
  /image_url is only supported by certain models/i,
  /does not support (image|vision|multimodal)/i,
  /(image|vision) (input|inputs|content) (is |are )?not supported/i,
  /not a multimodal model/i,
  /no endpoints found that support image input/i,
  /multimodal is not supported/i,
  /at most 0 image\(s\) may be provided/i,
  /unknown variant `image_url`/i,
];

export function isVisionRefusal(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const raw = (current as { error?: unknown }).error;
    const text = `${current.message} ${raw === undefined ? "" : JSON.stringify(raw)}`;
    if (REFUSALS.some((pattern) => pattern.test(text))) return true;
  }
  return false;
}

export interface VisionGate {
  /** Whether pictures should be attached to the next request to `model` (default: LLM_MODEL) at all. */
  enabled(model?: string): Promise<boolean>;
  /** The main client, with refusals learned (auto) and images stripped when off. */
  wrap<T extends LlmClient>(llm: T): T;
}

export interface VisionGateOptions {
  mode: VisionMode;
  /** LLM_MODEL: what `enabled()` asks about when no model is named. */
  model: string;
  memory: VisionMemory;
  /** The catalogue's `vision` flag of a model id; undefined: the mode decides. */
  declared?: (model: string) => boolean | undefined;
  log: Logger;
}

export function createVisionGate(options: VisionGateOptions): VisionGate {
  const { mode, memory, log } = options;
  /** How `model` is gated: the catalogue's word over the mode, except that off is off for all. */
  const modeOf = (model: string): VisionMode => {
    const declared = mode === "off" ? undefined : options.declared?.(model);
    return declared === undefined ? mode : declared ? "on" : "off";
  };
  const enabled = async (model = options.model) => {
    const effective = modeOf(model);
    if (effective !== "auto") return effective === "on";
    try {
      return (await memory.get(model)) !== false;
    } catch {
      return true;
    }
  };
  return {
    enabled,
    wrap<T extends LlmClient>(llm: T): T {
      // A request without pictures goes straight through: no promise of the gate's own around
      // the call. (A profile still shows this function "inclusive" of the client's synchronous
      // part, which it calls; its own work is one look at each message's content.)
      const complete = (request: ChatRequest): Promise<ChatResult> => (hasImageParts(request.messages) ? completeWithPictures(request) : llm.complete(request));
      const completeWithPictures = async (request: ChatRequest): Promise<ChatResult> => {
        if (!(await enabled(llm.model))) return llm.complete({ ...request, messages: withoutImageParts(request.messages) });
        try {
          return await llm.complete(request);
        } catch (error) {
          if (modeOf(llm.model) !== "auto" || !isVisionRefusal(error)) throw error;
          log.warn({ model: llm.model }, "vision-refused-by-model: pictures become placeholders for this model from now on (LLM_VISION=auto)");
          await memory.set(llm.model, false).catch(() => undefined);
          return llm.complete({ ...request, messages: withoutImageParts(request.messages) });
        }
      };
      return new Proxy(llm, { get: (target, property, receiver) => (property === "complete" ? complete : Reflect.get(target, property, receiver)) });
    },
  };
}
