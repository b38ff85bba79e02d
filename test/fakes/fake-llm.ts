/**
 * A small, honest fake of an OpenAI-compatible chat completions server (node:http, 127.0.0.1,
 * a free port). The real openai client talks HTTP to it; nothing is mocked.
 *
 *   const fake = await startFakeLlm();
 *   createLlmClient({ baseUrl: fake.url, ... })      // fake.url ends in "/v1"
 *   await fake.close();
 *
 * A POST /v1/chat/completions is recorded in `fake.requests` (parsed body, headers, arrival time,
 * in order), then answered by the first of:
 *   1. `fake.route(predicate, handler)`: e.g. `fake.route(bySystemPrompt(/summar/i), ...)`
 *      scripts the summarizer apart from the main model;
 *   2. `fake.enqueue(...responses)`: a queue, consumed in order;
 *   3. `fake.setHandler(handler)`: the default, initially `echo` ("echo: " + last user text, its
 *      leading time stamp `[Tue 2026-12-01 10:44 Europe/Berlin] ` left out: `parseStamp`).
 *
 * A `FakeResponse` is
 *   - `"text"` or `{ text?, toolCalls?, usage?, finishReason?, model?, delayMs? }`: a 200
 *     `chat.completion`. `usage` is the wire object (`prompt_tokens`, `completion_tokens`,
 *     `prompt_tokens_details.cached_tokens`); omitted, it is estimated as chars / 4 (messages with framing, tools) without
 *     `prompt_tokens_details` (like vLLM and llama.cpp); `null` leaves it out;
 *   - `{ status, headers?, body?, delayMs? }`: any HTTP answer, raw. `httpError.*` and
 *     `overflow.*` build the bodies real backends send;
 *   - `{ hang: true }`: never answered; the socket stays open until the client gives up.
 *
 * `const gate = fake.hold()`: requests arriving while it is held are recorded, then wait until
 * `gate.release()` (or until the client disconnects, as when a worker is killed mid-request).
 * `await fake.waitForRequests(n, timeoutMs)` resolves once n requests have arrived.
 * `stream: true` is answered as OpenAI streams (server-sent events): the text in chunks of one
 * "token" each (a word or up to 4 characters of one, cut by this fake, not by our tokenizer),
 * tool calls as an id + name delta followed by argument pieces, a chunk with `finish_reason`,
 * the usage in a last chunk without choices when `stream_options.include_usage` asks for it, then
 * `data: [DONE]`. `tokensPerSecond` (per reply, or `fake.setStreamRate`) paces the chunks;
 * `dropAfterTokens` destroys the connection after that many text chunks, mid-answer;
 * `stallAfterTokens` sends nothing more after that many (the connection stays open, as with a
 * stuck upstream); `streamError` sends OpenRouter's mid-stream error chunk after `afterTokens`
 * text chunks (`error` in the chunk, `finish_reason: "error"`) and ends the stream.
 * Each request records the id of the connection it came on (`connection`), so a test can see
 * whether the client reuses its keep-alive connections.
 *
 * `startFakeLlm({ rules: "openai" | "anthropic" | "vllm" | "vllm-alternating" | "ollama" | … })` refuses
 * requests that break that kind of server's message rules with its own 400 body (provider-rules.ts);
 * `rules: "azure"` also refuses a request without the `api-key` header, or on the deployment API
 * (`/openai/deployments/<d>/…`) without `api-version`, with Azure's 401 and 404.
 * `startFakeLlm({ tokenRatio, contextWindow })`: a provider whose tokenizer differs from ours.
 * It counts a request in its own unit (`ownPromptTokens`: characters / 4 with framing) × the ratio,
 * reports that as `prompt_tokens` (and the reply's length likewise as `completion_tokens`) on
 * every path, and refuses a request whose prompt plus `max_tokens` exceeds the window with the
 * overflow error of the server `rules` names (`fake.overWindow` lists them). Ollama refuses
 * nothing: with `rules: "ollama"` the window is its `num_ctx`, and a prompt over it loses its
 * oldest messages as Ollama drops them (`ollamaTruncation`); the handler and `usage` see what is
 * left, and `fake.truncated` lists the requests it happened to.
 * Content parts: `image_url` parts must carry a data URL of a PNG/JPEG/GIF/WEBP (checked by its
 * magic bytes) and a valid `detail`, else 400 as OpenAI answers. `options.vision: false` (or
 * `fake.setVision(false)`) makes it a text-only model: any image part is refused with OpenAI's
 * own words for that ("Invalid content type. image_url is only supported by certain models.").
 * `imagePartsOf(request)` lists the images a request carried.
 *
 * POST /v1/audio/transcriptions parses multipart/form-data like OpenAI (`file` and `model`
 * required, 25 MB at most: 413 above), records it in `fake.transcriptions`, and answers
 * `{ text }` from `fake.setTranscriber(handler)` (unset: OpenAI's 400 for unreadable audio).
 *
 * POST /v1/audio/speech (fake-speech.ts) checks the body as OpenAI does, records it in
 * `fake.speeches`, and answers real Ogg/Opus made at test time, or `fake.setSpeaker(handler)`'s
 * audio or error.
 *
 * GET /v1/models lists `options.models` (default: gpt-4o-mini) in OpenAI's shape. With
 * `options.apiKey`, every route answers 401 as OpenAI does unless `Authorization: Bearer <key>`
 * matches (such requests are not recorded).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { checkProviderRules, ollamaTruncation, type ProviderRules } from "./provider-rules.js";
import { answerSpeech, type FakeSpeaker, type RecordedSpeech } from "./fake-speech.js";

export type { FakeSpeaker, RecordedSpeech, SpeechAnswer } from "./fake-speech.js";

export interface FakeChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string }; extra_content?: unknown }>;
  tool_call_id?: string;
  reasoning_content?: unknown;
}

/** The request as sent; the fields named here are the ones tests look at most. */
export interface FakeChatRequestBody {
  model: string;
  messages: FakeChatMessage[];
  tools?: unknown[];
  max_tokens?: number;
  prompt_cache_key?: string;
  [key: string]: unknown;
}

export interface RecordedRequest {
  /** 0-based arrival order. */
  index: number;
  body: FakeChatRequestBody;
  headers: IncomingHttpHeaders;
  /** `Date.now()` at arrival. */
  at: number;
  /** The TCP connection it came on: 1, 2, … in the order the server accepted them. */
  connection: number;
  /** The path and query it was sent to (`/v1/chat/completions`; Azure's `/openai/deployments/<d>/chat/completions?api-version=…`). */
  url: string;
}

export interface WireUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
}

export interface FakeReply {
  text?: string | null;
  /**
   * The model's thinking, sent as `reasoning_content` with `rules: "deepseek"` (thinking mode: a
   * default thought when unset) and counted as reasoning tokens with `rules: "deepseek"` and
   * `"gemini"` (Gemini reports them apart from `completion_tokens`).
   */
  reasoning?: string;
  /** `arguments`: an object is JSON-encoded, a string sent as is; default `{}`. */
  toolCalls?: Array<{ name: string; arguments?: unknown; id?: string }>;
  usage?: WireUsage | null;
  finishReason?: string;
  model?: string;
  delayMs?: number;
  /** Streamed answers only: chunks per second (default: `setStreamRate`, else unpaced). */
  tokensPerSecond?: number;
  /** Streamed answers only: the connection is destroyed after this many text chunks. */
  dropAfterTokens?: number;
  /** Streamed answers only: nothing more is sent after this many text chunks; the connection stays open. */
  stallAfterTokens?: number;
  /** Streamed answers only: OpenRouter's error chunk after `afterTokens` text chunks, then the end. */
  streamError?: { afterTokens: number; error: { code: number | string; message: string } };
}

export interface FakeHttpError {
  status: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON, a string as is. */
  body?: unknown;
  delayMs?: number;
}

export type FakeResponse = string | FakeReply | FakeHttpError | { hang: true };
export type FakeHandler = (request: RecordedRequest) => FakeResponse | Promise<FakeResponse>;
export type RequestPredicate = (request: RecordedRequest) => boolean;

export interface RecordedTranscription {
  model: string;
  fileName: string;
  contentType: string;
  bytes: Buffer;
  headers: IncomingHttpHeaders;
  /** The path and query it was sent to. */
  url: string;
}

/** Answers a transcription: the text, or an HTTP error. */
export type FakeTranscriber = (file: RecordedTranscription) => string | FakeHttpError | Promise<string | FakeHttpError>;

export interface FakeLlm {
  readonly url: string;
  readonly requests: RecordedRequest[];
  readonly transcriptions: RecordedTranscription[];
  setTranscriber(handler: FakeTranscriber): void;
  readonly speeches: RecordedSpeech[];
  setSpeaker(handler: FakeSpeaker | undefined): void;
  /** false: a text-only model that refuses image parts. */
  setVision(supported: boolean): void;
  enqueue(...responses: FakeResponse[]): void;
  setHandler(handler: FakeHandler): void;
  /** Returns a function that removes the route. */
  route(predicate: RequestPredicate, handler: FakeHandler | FakeResponse): () => void;
  hold(): { release(): void };
  /** Default pace of streamed answers in chunks per second; 0 unpaced. */
  setStreamRate(tokensPerSecond: number): void;
  /** Streamed requests answered so far: chunks written per request index. */
  readonly streamedChunks: Map<number, number>;
  /** Indexes of the requests refused as over `contextWindow`. */
  readonly overWindow: readonly number[];
  /** `rules: "ollama"`: the requests whose oldest messages were dropped to fit `contextWindow`, and how many. */
  readonly truncated: ReadonlyArray<{ index: number; droppedMessages: number }>;
  /** A request's prompt in the provider's tokens (its own count × `tokenRatio`), as the window check counts it. */
  promptTokens(request: RecordedRequest): number;
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  close(): Promise<void>;
}

/** The text of a message's content: a string or an array of text parts. */
export const textOf = (content: unknown): string =>
  typeof content === "string" ? content
  : Array.isArray(content) ? content.map((part: { text?: unknown }) => (typeof part?.text === "string" ? part.text : "")).join("")
  : "";

/** The last user message's text as the user wrote it: its leading time stamp (`parseStamp`) left out. */
export const lastUserText = (request: RecordedRequest): string =>
  withoutStamp(textOf(request.body.messages.findLast((message) => message.role === "user")?.content));

export const systemText = (request: RecordedRequest): string =>
  request.body.messages.filter((message) => message.role === "system").map((message) => textOf(message.content)).join("\n");

export const bySystemPrompt = (pattern: RegExp | string): RequestPredicate => (request) =>
  typeof pattern === "string" ? systemText(request).includes(pattern) : pattern.test(systemText(request));

/** The image parts of every message of a request, in order. */
export const imagePartsOf = (request: RecordedRequest): Array<{ url: string; detail?: string }> =>
  request.body.messages.flatMap((message) =>
    Array.isArray(message.content)
      ? (message.content as Array<{ type?: string; image_url?: { url: string; detail?: string } }>).filter((part) => part.type === "image_url" && part.image_url).map((part) => part.image_url!)
      : []);

/** OpenAI's refusal of image parts by a model without vision. */
export const NO_VISION_ERROR = "Invalid content type. image_url is only supported by certain models.";

/** What OpenAI checks in an image part; the refusal, or undefined when it is acceptable. */
function imagePartProblem(part: { image_url?: { url?: unknown; detail?: unknown } }): string | undefined {
  const url = part.image_url?.url;
  const detail = part.image_url?.detail;
  if (detail !== undefined && detail !== "auto" && detail !== "low" && detail !== "high") return `Invalid value: '${String(detail)}'. Supported values are: 'low', 'high', and 'auto'.`;
  if (typeof url !== "string") return "Missing required parameter: 'messages[].content[].image_url.url'.";
  const match = /^data:(image\/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/=]+)$/.exec(url);
  if (!match) return "Invalid image URL: expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,...').";
  const bytes = Buffer.from(match[2]!, "base64");
  const magic: Record<string, (b: Buffer) => boolean> = {
    "image/png": (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
    "image/jpeg": (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
    "image/gif": (b) => b.subarray(0, 4).toString("latin1") === "GIF8",
    "image/webp": (b) => b.subarray(0, 4).toString("latin1") === "RIFF" && b.subarray(8, 12).toString("latin1") === "WEBP",
  };
  if (!magic[match[1]!]!(bytes)) return "You uploaded an unsupported image. Please make sure your image is valid.";
  return undefined;
}

/**
 * The send-time stamp a user message may start with, as docs/context-engine.md documents it
 * (`[Tue 2026-12-01 10:44 Europe/Berlin · 3 days after the previous message] `): weekday, date,
 * 24-hour time, an IANA zone, an optional gap of hours or days. Read by this fake's own pattern,
 * never by the product's formatter.
 */
export const TIME_STAMP = /^\[(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (\d{4})-(\d{2})-(\d{2}) ([01]\d|2[0-3]):([0-5]\d) ([A-Za-z_+-]+(?:\/[A-Za-z0-9_+-]+)*)(?: · (\d+) (hours?|days?) after the previous message)?\] /;

export interface ParsedStamp {
  weekday: string;
  /** `YYYY-MM-DD` in the zone. */
  date: string;
  /** `HH:MM` in the zone. */
  time: string;
  zone: string;
  gap?: { amount: number; unit: "hour" | "day" };
  /** The text after the stamp. */
  rest: string;
}

/** The stamp at the start of a user message's text, or undefined when there is none. */
export function parseStamp(text: string): ParsedStamp | undefined {
  const match = TIME_STAMP.exec(text);
  if (!match) return undefined;
  const [whole, weekday, year, month, day, hour, minute, zone, amount, unit] = match;
  return {
    weekday: weekday!, date: `${year}-${month}-${day}`, time: `${hour}:${minute}`, zone: zone!,
    ...(amount === undefined ? {} : { gap: { amount: Number(amount), unit: unit!.startsWith("day") ? "day" as const : "hour" as const } }),
    rest: text.slice(whole.length),
  };
}

/** A user message's text without its send-time stamp (what the user typed, and the speaker in groups). */
export const withoutStamp = (text: string): string => parseStamp(text)?.rest ?? text;

/** "echo: " + the last user message's text, its time stamp left out (the user's words, as a model would quote them). */
export const echo: FakeHandler = (request) => ({ text: `echo: ${lastUserText(request)}` });

const openAiError = (status: number, message: string, type: string, code: string | null, param: string | null = null): FakeHttpError =>
  ({ status, body: { error: { message, type, param, code } } });

/** Errors as OpenAI itself words them. */
export const httpError = {
  rateLimit: (wait: { retryAfterSeconds?: number; retryAfterMs?: number } = {}): FakeHttpError => ({
    ...openAiError(429, "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.", "requests", "rate_limit_exceeded"),
    headers: {
      ...(wait.retryAfterSeconds === undefined ? {} : { "retry-after": String(wait.retryAfterSeconds) }),
      ...(wait.retryAfterMs === undefined ? {} : { "retry-after-ms": String(wait.retryAfterMs) }),
    },
  }),
  server: (status = 500) => openAiError(status, "The server had an error while processing your request. Sorry about that!", "server_error", null),
  unauthorized: (message = "Incorrect API key provided: sk-proj-****1234. You can find your API key at https://platform.openai.com/account/api-keys.") =>
    openAiError(401, message, "invalid_request_error", "invalid_api_key"),
  badRequest: (message: string, param: string | null = null) => openAiError(400, message, "invalid_request_error", null, param),
};

/** `contextWindow`: the window the backend states; `requested`: the prompt size it reports. */
type OverflowOptions = { contextWindow?: number; requested?: number };
const sizes = (options: OverflowOptions, defaultWindow: number) => {
  const contextWindow = options.contextWindow ?? defaultWindow;
  return { window: contextWindow, requested: options.requested ?? contextWindow + 808 };
};
const llamaCppMessage = (requested: number, window: number) =>
  `request (${requested} tokens) exceeds the available context size (${window} tokens), try increasing it`;
const vllmError = ({ window, requested }: { window: number; requested: number }) => ({
  message: `This model's maximum context length is ${window} tokens. However, you requested ${requested} tokens (${requested - 512} in the messages, 512 in the completion). Please reduce the length of the messages or completion.`,
  type: "BadRequestError", param: null, code: 400,
});

/** Context-overflow refusals (HTTP 400), worded as each backend words them. */
export const overflow = {
  openai: (options: OverflowOptions = {}): FakeHttpError => {
    const { window, requested } = sizes(options, 8192);
    return openAiError(400, `This model's maximum context length is ${window} tokens. However, your messages resulted in ${requested} tokens. Please reduce the length of the messages.`, "invalid_request_error", "context_length_exceeded", "messages");
  },
  /** Anthropic's refusal relayed by OpenRouter: the words are only in `metadata.raw`. */
  anthropicViaOpenRouter: (options: OverflowOptions = {}): FakeHttpError => {
    const { window, requested } = sizes(options, 200_000);
    const raw = { type: "error", error: { type: "invalid_request_error", message: `prompt is too long: ${requested} tokens > ${window} maximum` } };
    return { status: 400, body: { error: { message: "Provider returned error", code: 400, metadata: { raw: JSON.stringify(raw), provider_name: "Anthropic" } }, user_id: "user_2fake" } };
  },
  /** OpenRouter's own check against the endpoint's context length. */
  openRouter: (options: OverflowOptions = {}): FakeHttpError => {
    const { window, requested } = sizes(options, 131_072);
    const message = `This endpoint's maximum context length is ${window} tokens. However, you requested about ${requested} tokens (${requested - 1024} of text input, 1024 in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.`;
    return { status: 400, body: { error: { message, code: 400, metadata: { provider_name: null } } } };
  },
  /** vLLM's current `{error: {...}}` body; `code` is the number 400. */
  vllm: (options: OverflowOptions = {}): FakeHttpError => ({ status: 400, body: { error: vllmError(sizes(options, 4096)) } }),
  /** vLLM's older flat body (SGLang's too): the openai SDK reads only `body.error` and sees nothing. */
  vllmFlat: (options: OverflowOptions = {}): FakeHttpError => ({ status: 400, body: { object: "error", ...vllmError(sizes(options, 4096)) } }),
  llamaCpp: (options: OverflowOptions = {}): FakeHttpError => {
    const { window, requested } = sizes(options, 4096);
    return { status: 400, body: { error: { code: 400, message: llamaCppMessage(requested, window), type: "exceed_context_size_error", n_prompt_tokens: requested, n_ctx: window } } };
  },
  /** Ollama's /v1: its runner's JSON error becomes the *message string* (middleware/openai.go). */
  ollama: (options: OverflowOptions = {}): FakeHttpError => {
    const { window, requested } = sizes(options, 4096);
    const runnerError = JSON.stringify({ error: { code: 400, message: llamaCppMessage(requested, window), type: "exceed_context_size_error" } });
    return { status: 400, body: { error: { message: runnerError, type: "invalid_request_error", param: null, code: null } } };
  },
};

const estimateTokens = (chars: number): number => Math.max(1, Math.ceil(chars / 4));

/**
 * The fake's own count of a request's prompt, before `tokenRatio`: characters / 4 of every
 * message's text plus 16 characters of framing each, the tool definitions' JSON, and a picture
 * at what a 1024×1024 one costs on OpenAI (765 at high detail, 85 at low). Its own unit, never
 * the product's tokenizer.
 */
export function ownPromptTokens(body: FakeChatRequestBody): number {
  const promptChars = body.messages.reduce((sum, message) => sum + textOf(message.content).length + 16, 0) +
    JSON.stringify(body.tools ?? []).length;
  const imageTokens = body.messages
    .flatMap((message) => (Array.isArray(message.content) ? message.content : []) as Array<{ type?: string; image_url?: { detail?: string } }>)
    .filter((part) => part.type === "image_url")
    .reduce((sum, part) => sum + (part.image_url?.detail === "low" ? 85 : 765), 0);
  return estimateTokens(promptChars) + imageTokens;
}

/** The provider's tokens: the fake's own count × its ratio, rounded up. */
const scaled = (own: number, ratio: number): number => Math.ceil(own * ratio);

/** What the request asks for its answer (`max_tokens` or `max_completion_tokens`), 0 when unset. */
const requestedCompletion = (body: FakeChatRequestBody): number => {
  const value = body.max_tokens ?? body.max_completion_tokens;
  return typeof value === "number" && value > 0 ? value : 0;
};

/**
 * Azure OpenAI's gate, before any body rule: the key in an `api-key` header (a bearer token is
 * Entra ID's, not a key: refused like a missing key), and on the deployment API an `api-version`
 * query parameter (without one Azure answers 404 "Resource not found"). Azure's `/openai/v1` API
 * takes no version. Bodies as Azure words them.
 */
function azureRefusal(url: URL, headers: IncomingHttpHeaders, apiKey: string | undefined): FakeHttpError | undefined {
  const key = headers["api-key"];
  if (key === undefined || key === "" || (apiKey !== undefined && key !== apiKey)) {
    return { status: 401, body: { error: { code: "401", message: "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource." } } };
  }
  if (!url.pathname.startsWith("/openai/v1/") && !url.searchParams.get("api-version")) {
    return { status: 404, body: { error: { code: "404", message: "Resource not found" } } };
  }
  return undefined;
}

/** A request over the window, refused with the words and shape of the server `rules` names (OpenAI by default). */
function windowRefusal(rules: ProviderRules | undefined, window: number, prompt: number, completion: number): FakeHttpError {
  const requested = prompt + completion;
  switch (rules) {
    case "anthropic":
      return { status: 400, body: { type: "error", error: { type: "invalid_request_error", message: `prompt is too long: ${requested} tokens > ${window} maximum` } } };
    case "gemini":
      return { status: 400, body: [{ error: { code: 400, message: `The input token count (${prompt}) exceeds the maximum number of tokens allowed (${window}).`, status: "INVALID_ARGUMENT" } }] };
    case "mistral":
      return { status: 400, body: { object: "error", message: `Prompt contains ${prompt} tokens and ${completion} draft tokens, too large for model with ${window} maximum context length`, type: "invalid_request_prompt", param: null, code: "3051" } };
    case "vllm":
    case "vllm-alternating":
      // vLLM 0.19's check of prompt + max_tokens against max_model_len (serving.py), as its users quote it.
      return { status: 400, body: { error: { message: `This model's maximum context length is ${window} tokens. However, you requested ${completion} output tokens and your prompt contains at least ${prompt} input tokens, for a total of at least ${requested} tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=${prompt})`, type: "BadRequestError", param: "input_tokens", code: 400 } } };
    default:
      return completion > 0
        ? openAiError(400, `This model's maximum context length is ${window} tokens. However, you requested ${requested} tokens (${prompt} in the messages, ${completion} in the completion). Please reduce the length of the messages or completion.`, "invalid_request_error", "context_length_exceeded", "messages")
        : overflow.openai({ contextWindow: window, requested });
  }
}

/** A Gemini thought signature: opaque bytes, base64, as Google issues them. */
const geminiSignature = (request: RecordedRequest): string => Buffer.from(`fake-thought-${request.index}-${Math.random()}`).toString("base64");

/** What the dialect of `rules` adds to an answer: DeepSeek's reasoning, Gemini's signature on a step's first call. */
interface DialectExtras {
  rules?: ProviderRules;
  /** Gemini: every signature issued, so a request can only send back real ones. */
  signatures?: Set<string>;
}

function completionBody(reply: FakeReply, request: RecordedRequest, tokenRatio = 1, extras: DialectExtras = {}): unknown {
  const toolCalls = (reply.toolCalls ?? []).map((call, position) => ({
    id: call.id ?? `call_${request.index}_${position}`,
    type: "function",
    function: { name: call.name, arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {}) },
    ...(position === 0 && extras.rules === "gemini" ? { extra_content: { google: { thought_signature: issue(extras.signatures, geminiSignature(request)) } } } : {}),
  }));
  const content = reply.text ?? null;
  const reasoning = extras.rules === "deepseek" ? reply.reasoning ?? `Thinking about request ${request.index}.` : extras.rules === "gemini" ? reply.reasoning : undefined;
  const reasoningTokens = reasoning === undefined ? 0 : scaled(estimateTokens(reasoning.length), tokenRatio);
  let usage: WireUsage | undefined;
  if (reply.usage !== null) {
    // Like a real server, the prompt includes the tool definitions and each message's framing.
    const prompt = reply.usage?.prompt_tokens ?? scaled(ownPromptTokens(request.body), tokenRatio);
    const answer = reply.usage?.completion_tokens ?? scaled(estimateTokens((content ?? JSON.stringify(toolCalls)).length), tokenRatio);
    // DeepSeek counts the reasoning in completion_tokens; Gemini reports it only apart.
    const completion = extras.rules === "deepseek" ? answer + reasoningTokens : answer;
    usage = {
      ...reply.usage, prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion + (extras.rules === "gemini" ? reasoningTokens : 0),
      ...(reasoning === undefined ? {} : { completion_tokens_details: { reasoning_tokens: reasoningTokens } }),
    };
  }
  return {
    id: `chatcmpl-fake-${request.index}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: reply.model ?? request.body.model,
    choices: [{
      index: 0,
      message: { role: "assistant", content, ...(extras.rules === "deepseek" && reasoning !== undefined ? { reasoning_content: reasoning } : {}), ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
      finish_reason: reply.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop"),
      logprobs: null,
    }],
    ...(usage === undefined ? {} : { usage }),
  };
}

function issue(signatures: Set<string> | undefined, signature: string): string {
  signatures?.add(signature);
  return signature;
}

/** The pieces a streamed text goes out in: words (with their space), long ones cut every 4 characters. */
export function streamPieces(text: string): string[] {
  const pieces: string[] = [];
  for (const word of text.match(/\s*\S+|\s+/gu) ?? []) {
    const characters = [...word];
    for (let at = 0; at < characters.length; at += 4) pieces.push(characters.slice(at, at + 4).join(""));
  }
  return pieces;
}

interface StreamPlan {
  tokensPerSecond: number;
  dropAfterTokens?: number;
  stallAfterTokens?: number;
  streamError?: FakeReply["streamError"];
  gone: Promise<void>;
  isClosed: () => boolean;
  onChunk: () => void;
}

/** Writes a completion as OpenAI's server-sent events; see the file comment. */
async function streamCompletion(response: ServerResponse, reply: FakeReply, request: RecordedRequest, plan: StreamPlan & { tokenRatio: number; extras: DialectExtras }): Promise<void> {
  const whole = completionBody(reply, request, plan.tokenRatio, plan.extras) as {
    id: string; created: number; model: string;
    choices: Array<{ message: { content: string | null; reasoning_content?: string; tool_calls?: Array<{ id: string; function: { name: string; arguments: string }; extra_content?: unknown }> }; finish_reason: string }>;
    usage?: WireUsage;
  };
  const choice = whole.choices[0]!;
  const base = { id: whole.id, object: "chat.completion.chunk", created: whole.created, model: whole.model };
  const event = (payload: unknown) => new Promise<void>((resolve) => void response.write(`data: ${JSON.stringify(payload)}\n\n`, () => resolve()));
  const pause = plan.tokensPerSecond > 0 ? 1000 / plan.tokensPerSecond : 0;
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  let written = event({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null, logprobs: null }] });
  // DeepSeek streams the thinking first, in `reasoning_content` deltas.
  for (const piece of streamPieces(choice.message.reasoning_content ?? "")) {
    written = event({ ...base, choices: [{ index: 0, delta: { content: null, reasoning_content: piece }, finish_reason: null, logprobs: null }] });
  }
  let sent = 0;
  const startedAt = Date.now();
  for (const piece of streamPieces(choice.message.content ?? "")) {
    if (plan.dropAfterTokens !== undefined && sent >= plan.dropAfterTokens) {
      // What was written reaches the client first, then the connection drops.
      await Promise.race([written, plan.gone]);
      response.destroy();
      return;
    }
    if (plan.stallAfterTokens !== undefined && sent >= plan.stallAfterTokens) return;
    if (plan.streamError !== undefined && sent >= plan.streamError.afterTokens) {
      void event({ ...base, provider: "fake", error: plan.streamError.error, choices: [{ index: 0, delta: { content: "" }, finish_reason: "error", logprobs: null }] });
      response.end();
      return;
    }
    // Paced against the clock from the first chunk, so late timers (a loaded machine) do not slow the rate.
    const due = startedAt + (sent + 1) * pause;
    if (pause > 0) await Promise.race([new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now()))), plan.gone]);
    if (plan.isClosed()) return;
    written = event({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null, logprobs: null }] });
    sent++;
    plan.onChunk();
  }
  for (const [index, call] of (choice.message.tool_calls ?? []).entries()) {
    void event({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" }, ...(call.extra_content === undefined ? {} : { extra_content: call.extra_content }) }] }, finish_reason: null, logprobs: null }] });
    const args = call.function.arguments;
    for (let at = 0; at < args.length; at += 8) {
      void event({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(at, at + 8) } }] }, finish_reason: null, logprobs: null }] });
    }
  }
  void event({ ...base, choices: [{ index: 0, delta: {}, finish_reason: choice.finish_reason, logprobs: null }] });
  const includeUsage = (request.body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
  if (includeUsage && whole.usage) void event({ ...base, choices: [], usage: whole.usage });
  response.end("data: [DONE]\n\n");
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { "content-type": "application/json", ...headers }).end(typeof body === "string" ? body : JSON.stringify(body));
}

export interface FakeLlmOptions {
  /**
   * Enforce one kind of server's tool-message rules (provider-rules.ts): a request that breaks
   * them is recorded and answered with that server's 400, before any route, queue or handler.
   * A fake is at least as strict as the real service: OpenAI's rules hold unless a test names
   * another server. @defaultValue "openai"
   */
  rules?: ProviderRules;
  /** The only key accepted; unset: any key (or none) is accepted. */
  apiKey?: string;
  /** What GET /v1/models lists. @defaultValue ["gpt-4o-mini"] */
  models?: readonly string[];
  /** false: a text-only model (image parts refused). @defaultValue true */
  vision?: boolean;
  /**
   * The provider's tokens per token of the fake's own count (`ownPromptTokens`: characters / 4,
   * never the product's tokenizer), as a Claude, Llama or Qwen tokenizer differs from o200k.
   * Scales the `prompt_tokens` and `completion_tokens` it reports (when the reply does not script
   * them) and the window check, on every path: main, summarizer, streamed. @defaultValue 1
   */
  tokenRatio?: number;
  /**
   * The model's window in the provider's tokens. A request whose prompt (`ownPromptTokens` ×
   * `tokenRatio`) plus its `max_tokens` exceeds it is recorded and refused, as that kind of
   * server refuses it (`rules`: OpenAI's context_length_exceeded by default, Anthropic's "prompt
   * is too long", vLLM's, Ollama's), after the rule checks and before any route or handler.
   * Unset: no check.
   */
  contextWindow?: number;
}

/** OpenAI's limit on an uploaded audio file. */
export const TRANSCRIPTION_MAX_BYTES = 25 * 1024 * 1024;

export async function startFakeLlm(options: FakeLlmOptions = {}): Promise<FakeLlm> {
  const requests: RecordedRequest[] = [];
  const queue: FakeResponse[] = [];
  const routes: Array<{ predicate: RequestPredicate; handler: FakeHandler | FakeResponse }> = [];
  const waiters = new Set<() => void>();
  let fallback: FakeHandler = echo;
  let vision = options.vision ?? true;
  const transcriptions: RecordedTranscription[] = [];
  let transcriber: FakeTranscriber | undefined;
  const speeches: RecordedSpeech[] = [];
  let speaker: FakeSpeaker | undefined;

  const transcribe = async (raw: Buffer, headers: IncomingHttpHeaders, url: string, response: ServerResponse): Promise<void> => {
    if (raw.length > TRANSCRIPTION_MAX_BYTES + 64 * 1024) {
      return send(response, 413, { error: { message: `Maximum content size limit (${TRANSCRIPTION_MAX_BYTES}) exceeded (${raw.length} bytes read)`, type: "server_error", param: null, code: null } });
    }
    let form: FormData;
    try {
      // undici's multipart parser: independent of the client's encoder.
      form = await new Response(raw, { headers: { "content-type": String(headers["content-type"] ?? "") } }).formData();
    } catch {
      const refusal = httpError.badRequest("Could not parse multipart form");
      return send(response, refusal.status, refusal.body);
    }
    const file = form.get("file");
    const model = form.get("model");
    if (typeof model !== "string" || model === "") return send(response, 400, httpError.badRequest("you must provide a model parameter", "model").body);
    if (file === null || typeof file === "string") return send(response, 400, httpError.badRequest("Missing required parameter: 'file'.", "file").body);
    const recorded: RecordedTranscription = { model, fileName: file.name, contentType: file.type, bytes: Buffer.from(await file.arrayBuffer()), headers, url };
    transcriptions.push(recorded);
    const answer = transcriber ? await transcriber(recorded) : httpError.badRequest("Audio file might be corrupted or unsupported", "file");
    if (typeof answer === "string") return send(response, 200, { text: answer });
    return send(response, answer.status, answer.body ?? "", answer.headers);
  };
  let gate: Promise<void> | undefined;
  let streamRate = 0;
  const streamedChunks = new Map<number, number>();
  const tokenRatio = options.tokenRatio ?? 1;
  const rules = options.rules ?? "openai";
  const overWindow: number[] = [];
  const truncated: Array<{ index: number; droppedMessages: number }> = [];
  const extras: DialectExtras = { rules, signatures: new Set<string>() };

  const pick = async (request: RecordedRequest): Promise<FakeResponse> => {
    const route = routes.find((candidate) => candidate.predicate(request));
    if (route) return typeof route.handler === "function" ? route.handler(request) : route.handler;
    return queue.shift() ?? fallback(request);
  };

  const answer = async (body: string, headers: IncomingHttpHeaders, connection: number, url: string, response: ServerResponse): Promise<void> => {
    const request: RecordedRequest = { index: requests.length, body: JSON.parse(body) as FakeChatRequestBody, headers, at: Date.now(), connection, url };
    requests.push(request);
    for (const wake of waiters) wake();
    // The client may give up (timeout, abort, a killed worker) while we wait: then stay silent.
    let closed = false;
    const gone = new Promise<void>((resolve) => response.on("close", () => resolve(void (closed = true))));
    if (gate) await Promise.race([gate, gone]);
    if (closed) return;
    const refusal = checkProviderRules(rules, request.body, { signatures: extras.signatures! });
    if (refusal) return send(response, refusal.status, refusal.body);
    // What the model sees: the request, or with Ollama what is left of it once it fits num_ctx.
    let seen = request;
    if (options.contextWindow !== undefined && options.rules === "ollama") {
      const cut = ollamaTruncation(request.body, options.contextWindow, (body) => scaled(ownPromptTokens(body), tokenRatio));
      if (cut.droppedMessages > 0) {
        truncated.push({ index: request.index, droppedMessages: cut.droppedMessages });
        seen = { ...request, body: { ...request.body, messages: cut.messages } };
      }
    } else if (options.contextWindow !== undefined) {
      const prompt = scaled(ownPromptTokens(request.body), tokenRatio);
      const completion = requestedCompletion(request.body);
      if (prompt + completion > options.contextWindow) {
        overWindow.push(request.index);
        const over = windowRefusal(rules, options.contextWindow, prompt, completion);
        return send(response, over.status, over.body);
      }
    }
    const imageParts = request.body.messages.flatMap((message) => (Array.isArray(message.content) ? message.content : []) as Array<{ type?: string; image_url?: { url?: unknown; detail?: unknown } }>)
      .filter((part) => part.type === "image_url");
    if (imageParts.length > 0) {
      const problem = vision ? imageParts.map(imagePartProblem).find((found) => found !== undefined) : NO_VISION_ERROR;
      if (problem) {
        const refusal = httpError.badRequest(problem, "messages");
        return send(response, refusal.status, refusal.body);
      }
    }
    const picked = await pick(seen);
    if (typeof picked === "object" && "hang" in picked) return;
    const reply: FakeReply | FakeHttpError = typeof picked === "string" ? { text: picked } : picked;
    if (reply.delayMs) await Promise.race([new Promise((resolve) => setTimeout(resolve, reply.delayMs)), gone]);
    if (closed) return;
    if ("status" in reply) send(response, reply.status, reply.body ?? "", reply.headers);
    else if (request.body.stream === true) {
      streamedChunks.set(request.index, 0);
      await streamCompletion(response, reply, seen, {
        tokensPerSecond: reply.tokensPerSecond ?? streamRate,
        ...(reply.dropAfterTokens === undefined ? {} : { dropAfterTokens: reply.dropAfterTokens }),
        ...(reply.stallAfterTokens === undefined ? {} : { stallAfterTokens: reply.stallAfterTokens }),
        ...(reply.streamError === undefined ? {} : { streamError: reply.streamError }),
        gone,
        tokenRatio,
        extras,
        isClosed: () => closed,
        onChunk: () => void streamedChunks.set(request.index, (streamedChunks.get(request.index) ?? 0) + 1),
      });
    } else send(response, 200, completionBody(reply, seen, tokenRatio, extras));
  };

  const connectionIds = new WeakMap<Socket, number>();
  let connections = 0;
  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const url = new URL(incoming.url ?? "/", "http://fake");
      if (rules === "azure") {
        const refusal = azureRefusal(url, incoming.headers, options.apiKey);
        if (refusal) return send(response, refusal.status, refusal.body);
      } else if (options.apiKey !== undefined && incoming.headers.authorization !== `Bearer ${options.apiKey}`) {
        const refusal = httpError.unauthorized();
        return send(response, refusal.status, refusal.body);
      }
      // OpenAI's paths, and Azure's: /openai/deployments/<deployment>/… or /openai/v1/… (any query).
      const path = url.pathname.replace(/^\/openai\/(v1\/)?(deployments\/[^/]+\/)?/, "/v1/").replace(/^\/v1\/deployments\/[^/]+\//, "/v1/");
      if (incoming.method === "GET" && path === "/v1/models") {
        const data = (options.models ?? ["gpt-4o-mini"]).map((id) => ({ id, object: "model", created: 1_700_000_000, owned_by: "fake" }));
        return send(response, 200, { object: "list", data });
      }
      if (incoming.method === "POST" && path === "/v1/audio/transcriptions") {
        transcribe(Buffer.concat(chunks), incoming.headers, incoming.url ?? "", response).catch((error: unknown) => {
          if (!response.headersSent) send(response, 500, { error: { message: `fake LLM: ${String(error)}`, type: "server_error", param: null, code: null } });
        });
        return;
      }
      if (incoming.method === "POST" && path === "/v1/audio/speech") {
        answerSpeech(Buffer.concat(chunks), incoming.headers, speeches, speaker, response).catch((error: unknown) => {
          if (!response.headersSent) send(response, 500, { error: { message: `fake LLM: ${String(error)}`, type: "server_error", param: null, code: null } });
        });
        return;
      }
      if (incoming.method !== "POST" || path !== "/v1/chat/completions") {
        return send(response, 404, { error: { message: `no route ${incoming.method} ${incoming.url}`, type: "invalid_request_error", param: null, code: null } });
      }
      answer(Buffer.concat(chunks).toString("utf8"), incoming.headers, connectionIds.get(incoming.socket) ?? 0, incoming.url ?? "", response).catch((error: unknown) => {
        if (!response.headersSent) send(response, 500, { error: { message: `fake LLM: ${String(error)}`, type: "server_error", param: null, code: null } });
      });
    });
  });
  server.on("connection", (socket: Socket) => void connectionIds.set(socket, ++connections));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    transcriptions,
    setTranscriber: (handler) => void (transcriber = handler),
    speeches,
    setSpeaker: (handler) => void (speaker = handler),
    setVision: (supported) => void (vision = supported),
    enqueue: (...responses) => void queue.push(...responses),
    setHandler: (handler) => void (fallback = handler),
    route(predicate, handler) {
      const entry = { predicate, handler };
      routes.push(entry);
      return () => void routes.splice(routes.indexOf(entry), 1);
    },
    hold() {
      let open!: () => void;
      const held = new Promise<void>((resolve) => (open = resolve));
      gate = held;
      return { release: () => { if (gate === held) gate = undefined; open(); } };
    },
    setStreamRate: (tokensPerSecond) => void (streamRate = tokensPerSecond),
    streamedChunks,
    overWindow,
    truncated,
    promptTokens: (request) => scaled(ownPromptTokens(request.body), tokenRatio),
    waitForRequests(count, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const settle = (outcome: () => void) => { clearTimeout(timer); waiters.delete(check); outcome(); };
        const check = () => { if (requests.length >= count) settle(() => resolve(requests.slice(0, count))); };
        const timer = setTimeout(() => settle(() => reject(new Error(`fake LLM: ${requests.length} of ${count} requests arrived within ${timeoutMs} ms`))), timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      gate = undefined;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
