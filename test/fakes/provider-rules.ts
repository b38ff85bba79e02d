/**
 * The tool-message rules each kind of server enforces, with the error bodies it answers, for the
 * fake LLM's `rules` option. Each check reads the request as that server does (its own notion of
 * message order and pairing), never with the product's code.
 *
 * - `openai`: every assistant `tool_calls` entry needs a `tool` message answering it before the
 *   next non-tool message; a `tool` message must answer a call of the assistant message its run
 *   follows; `tool_choice` needs `tools`.
 * - `anthropic` (Anthropic's OpenAI-compatible endpoint, or Claude behind OpenRouter): the history
 *   is read as Anthropic messages (system lifted out, tool results become `tool_result` blocks of
 *   a user turn, consecutive same-role messages merged). A request whose history has tool calls
 *   or results must define `tools`; each `tool_use` needs its `tool_result` in the very next
 *   message, ahead of any text there, and each `tool_result` its `tool_use` in the one before; the first message must be the
 *   user's; no message may be empty.
 * - `vllm`: vLLM serving a ChatML-family model with its own chat template (Qwen3.5's is the
 *   common case): `tool_choice` needs `tools` (vLLM's request validation); the template raises
 *   "System message must be at the beginning." for a `system` message anywhere but first, and
 *   "No user query found in messages." when no `user` message is left; vLLM answers a template
 *   error with 400 and the exception's text. The template renders whatever tool pairs it gets.
 * - `vllm-alternating`: the same server with a Mistral/Llama-2/Gemma-style template: after the
 *   optional first `system` message the roles must alternate user/assistant/user/…, starting
 *   with the user; `tool` messages and assistant messages carrying `tool_calls` are left out of
 *   the count (Mistral-7B-Instruct-v0.3's template does so); a later `system` message is refused.
 * - `ollama`: its /v1 parses each assistant tool call's `arguments` as JSON and refuses the
 *   request when one is not; it checks no pairing. A prompt over its context (`num_ctx`) is not
 *   refused: `ollamaTruncation` drops messages from the front as Ollama does.
 *
 * - `gemini`: Google's OpenAI-compatible endpoint parses the request into its own proto and
 *   refuses any field it does not know, at the top or in a message ("Invalid JSON payload
 *   received. Unknown name \"prompt_cache_key\": Cannot find field.", status INVALID_ARGUMENT, the
 *   body a one-element array); Gemini 3 wants each assistant step of the current turn that
 *   calls functions to carry its first call's `extra_content.google.thought_signature` — one it
 *   issued, or Google's documented `skip_thought_signature_validator` for a trace from elsewhere.
 * - `deepseek`: thinking mode (the default of V4) answers with `reasoning_content`, and an
 *   assistant step that called tools since the last user message must carry its
 *   `reasoning_content` back ("The reasoning_content in the thinking mode must be passed back to
 *   the API.").
 * - `mistral`: la Plateforme validates with pydantic and forbids extra fields at every level:
 *   422 `extra_forbidden` "Extra inputs are not permitted", the field's path in `loc`.
 *
 * A prompt over the window (vLLM's `max_model_len`, prompt + `max_tokens`) is the fake LLM's
 * `contextWindow` check, worded per server (`windowRefusal` in fake-llm.ts).
 */
import type { FakeChatMessage, FakeChatRequestBody, FakeHttpError } from "./fake-llm.js";

export type ProviderRules = "openai" | "azure" | "anthropic" | "vllm" | "vllm-alternating" | "ollama" | "gemini" | "deepseek" | "mistral";

/** Every rule set, for tests that run against each. */
export const ALL_PROVIDER_RULES: readonly ProviderRules[] = ["openai", "azure", "anthropic", "vllm", "vllm-alternating", "ollama", "gemini", "deepseek", "mistral"];

/** The `LLM_PROVIDER` value an operator sets for the server each rule set models. */
export const PROVIDER_FOR_RULES = {
  openai: "openai", azure: "azure", anthropic: "anthropic", vllm: "vllm", "vllm-alternating": "vllm", ollama: "ollama", gemini: "gemini", deepseek: "deepseek", mistral: "mistral",
} as const satisfies Record<ProviderRules, string>;

/** What a stateful provider issued earlier in the session: Gemini's thought signatures. */
export interface IssuedByProvider {
  signatures?: ReadonlySet<string>;
}

/** Google's documented signature for function calls that have none of their own. */
export const GEMINI_SKIP_SIGNATURE = "skip_thought_signature_validator";

const textOf = (content: unknown): string =>
  typeof content === "string" ? content : Array.isArray(content) ? content.map((part: { text?: unknown }) => (typeof part?.text === "string" ? part.text : "")).join("") : "";

const openAiError = (message: string, param: string | null, code: string | null = null): FakeHttpError =>
  ({ status: 400, body: { error: { message, type: "invalid_request_error", param, code } } });
const anthropicError = (message: string): FakeHttpError =>
  ({ status: 400, body: { type: "error", error: { type: "invalid_request_error", message } } });

export function checkProviderRules(rules: ProviderRules | undefined, body: FakeChatRequestBody, issued: IssuedByProvider = {}): FakeHttpError | undefined {
  switch (rules) {
    case "gemini":
      return checkGemini(body, issued) ?? checkOpenAi(body);
    case "deepseek":
      return checkDeepSeek(body) ?? checkOpenAi(body);
    case "mistral":
      return checkMistral(body) ?? checkOpenAi(body);
    case undefined:
      return undefined;
    case "openai":
    case "azure":
      return checkOpenAi(body);
    case "anthropic":
      return checkAnthropic(body);
    case "vllm":
      return checkVllmRequest(body) ?? checkChatMlTemplate(body.messages);
    case "vllm-alternating":
      return checkVllmRequest(body) ?? checkAlternatingTemplate(body.messages);
    case "ollama":
      for (const message of body.messages) {
        for (const call of message.tool_calls ?? []) {
          try {
            JSON.parse(call.function.arguments);
          } catch {
            return { status: 400, body: { error: { message: "invalid tool call arguments", type: "invalid_request_error", param: null, code: null } } };
          }
        }
      }
      return undefined;
  }
}

/** vLLM's refusal: its current `{ error: {...} }` body with `BadRequestError` and the number 400. */
const vllmError = (message: string): FakeHttpError => ({ status: 400, body: { error: { message, type: "BadRequestError", param: null, code: 400 } } });

/** vLLM's own request validation, before any template. */
function checkVllmRequest(body: FakeChatRequestBody): FakeHttpError | undefined {
  if (body.tool_choice !== undefined && body.tool_choice !== null && !(body.tools && body.tools.length > 0)) {
    return vllmError("When using `tool_choice`, `tools` must be set.");
  }
  return undefined;
}

/**
 * Qwen3.5's chat template (ChatML): a system message only first, and a user query somewhere.
 * Sources: the template's `raise_exception('System message must be at the beginning.')` and
 * `raise_exception('No user query found in messages.')`, as clients report them
 * (anomalyco/opencode#16560; llama.cpp and vLLM relay them as 400/500 with that text).
 */
function checkChatMlTemplate(messages: readonly FakeChatMessage[]): FakeHttpError | undefined {
  if (messages.some((message, index) => message.role === "system" && index > 0)) return vllmError("System message must be at the beginning.");
  if (!messages.some((message) => message.role === "user")) return vllmError("No user query found in messages.");
  return undefined;
}

/**
 * Mistral-7B-Instruct-v0.3's chat template (Llama-2's and Gemma's check roles the same way, minus
 * the tool exemption): "After the optional system message, conversation roles must alternate
 * user/assistant/user/assistant/..." — vLLM answers it with 400 (vllm-project/vllm#6862,
 * microsoft/autogen#1037). Tool results and assistant messages with `tool_calls` are not
 * counted; any other role there is refused by the template's render loop.
 */
function checkAlternatingTemplate(messages: readonly FakeChatMessage[]): FakeHttpError | undefined {
  const rest = messages[0]?.role === "system" ? messages.slice(1) : messages;
  let position = 0;
  for (const message of rest) {
    if (message.role === "tool" || (message.role === "assistant" && (message.tool_calls?.length ?? 0) > 0)) continue;
    if ((message.role === "user") !== (position % 2 === 0)) {
      return vllmError("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...");
    }
    position += 1;
  }
  if (rest.some((message) => message.role !== "user" && message.role !== "assistant" && message.role !== "tool")) {
    return vllmError("Only user and assistant roles are supported, with the exception of an initial optional system message!");
  }
  return undefined;
}

/**
 * What Ollama's model sees of a prompt over its context (`num_ctx`): ollama/ollama
 * server/prompt.go `chatPrompt` drops whole messages from the front until the rendered prompt
 * fits, keeping every system message among the dropped ones and the last message whatever its
 * size, and never keeping a tool result without the assistant message that called it. No error:
 * the request is answered from what is left (the server only logs "truncating input messages
 * which exceed context length"). `countTokens` is the fake's own count of a request.
 */
export function ollamaTruncation(
  body: FakeChatRequestBody,
  numCtx: number,
  countTokens: (body: FakeChatRequestBody) => number,
): { messages: FakeChatMessage[]; droppedMessages: number } {
  const messages = body.messages;
  // Where a message's tool block starts: a tool result belongs to the assistant call before its run.
  const blockStart = (index: number) => {
    if (index <= 0 || messages[index]?.role !== "tool") return index;
    let start = index;
    while (start > 0 && messages[start - 1]!.role === "tool") start -= 1;
    const owner = messages[start - 1];
    return owner?.role === "assistant" && (owner.tool_calls?.length ?? 0) > 0 ? start - 1 : index;
  };
  for (let index = 0; index < messages.length; index += 1) {
    const start = blockStart(index);
    const kept = [...messages.slice(0, start).filter((message) => message.role === "system"), ...messages.slice(start)];
    if (countTokens({ ...body, messages: kept }) <= numCtx || index === messages.length - 1) {
      return { messages: kept, droppedMessages: messages.length - kept.length };
    }
  }
  return { messages: [...messages], droppedMessages: 0 };
}

function checkOpenAi(body: FakeChatRequestBody): FakeHttpError | undefined {
  if (body.tool_choice !== undefined && !(body.tools && body.tools.length > 0)) {
    return openAiError("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "tool_choice");
  }
  const messages = body.messages;
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index]!;
    if (message.role === "tool") {
      // A tool message answers a call of the assistant message its run of tool messages follows.
      let owner = index - 1;
      while (owner >= 0 && messages[owner]!.role === "tool") owner -= 1;
      const calls = messages[owner]?.role === "assistant" ? messages[owner]!.tool_calls ?? [] : [];
      if (calls.length === 0 || !calls.some((call) => call.id === message.tool_call_id)) {
        return openAiError("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", `messages.[${index}].role`);
      }
    }
    if (message.role === "assistant" && (message.tool_calls?.length ?? 0) > 0) {
      const answered = new Set<string>();
      for (let next = index + 1; next < messages.length && messages[next]!.role === "tool"; next += 1) answered.add(messages[next]!.tool_call_id ?? "");
      const missing = message.tool_calls!.map((call) => call.id).filter((id) => !answered.has(id));
      if (missing.length > 0) {
        return openAiError(
          `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(", ")}`,
          `messages.[${index}].role`,
        );
      }
    }
  }
  return undefined;
}

interface AnthropicTurn {
  role: "user" | "assistant";
  texts: string[];
  toolUses: string[];
  toolResults: string[];
  /** Tool results that open the turn, before any text: the only ones Anthropic pairs with the previous turn's calls. */
  leadingResults: string[];
}

/** The history as Anthropic sees it once the compatibility layer has translated it. */
function toAnthropicTurns(messages: readonly FakeChatMessage[]): AnthropicTurn[] {
  const turns: AnthropicTurn[] = [];
  for (const message of messages) {
    if (message.role === "system" || message.role === "developer") continue;
    const role = message.role === "assistant" ? "assistant" : "user";
    let turn = turns.at(-1);
    if (turn?.role !== role) {
      turn = { role, texts: [], toolUses: [], toolResults: [], leadingResults: [] };
      turns.push(turn);
    }
    if (message.role === "tool") {
      turn.toolResults.push(message.tool_call_id ?? "");
      if (turn.texts.length === 0) turn.leadingResults.push(message.tool_call_id ?? "");
    }
    else {
      const text = textOf(message.content);
      if (text !== "" || message.content === "") turn.texts.push(text);
      for (const call of message.tool_calls ?? []) turn.toolUses.push(call.id);
    }
  }
  return turns;
}

function checkAnthropic(body: FakeChatRequestBody): FakeHttpError | undefined {
  const turns = toAnthropicTurns(body.messages);
  const usesTools = turns.some((turn) => turn.toolUses.length > 0 || turn.toolResults.length > 0);
  if (usesTools && !(body.tools && body.tools.length > 0)) {
    return anthropicError("Requests which include `tool_use` or `tool_result` blocks must define tools.");
  }
  if (turns[0]?.role !== "user") return anthropicError('messages: first message must use the "user" role');
  for (const [index, turn] of turns.entries()) {
    const isFinal = index === turns.length - 1;
    const empty = turn.toolUses.length === 0 && turn.toolResults.length === 0 && turn.texts.every((text) => text.trim() === "");
    if (empty && !(isFinal && turn.role === "assistant")) {
      return anthropicError(`messages.${index}: all messages must have non-empty content except for the optional final assistant message`);
    }
    if (turn.role === "assistant" && turn.toolUses.length > 0) {
      const next = turns[index + 1];
      const missing = turn.toolUses.filter((id) => !(next?.leadingResults ?? []).includes(id));
      if (missing.length > 0) {
        return anthropicError(`messages.${index}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`);
      }
    }
    if (turn.role === "user") {
      const previous = turns[index - 1];
      for (const [position, id] of turn.toolResults.entries()) {
        if (!(previous?.toolUses ?? []).includes(id)) {
          return anthropicError(`messages.${index}.content.${position}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`);
        }
      }
    }
  }
  return undefined;
}

/** The messages since the last user message: the current turn's tool loop. */
const currentTurn = (messages: readonly FakeChatMessage[]): FakeChatMessage[] => {
  const lastUser = messages.findLastIndex((message) => message.role === "user");
  return messages.slice(lastUser + 1);
};

const GEMINI_TOP = new Set(["model", "messages", "tools", "tool_choice", "max_tokens", "max_completion_tokens", "stream", "stream_options", "temperature", "top_p", "n", "stop", "response_format", "reasoning_effort", "seed", "presence_penalty", "frequency_penalty", "extra_body"]);
const GEMINI_MESSAGE = new Set(["role", "content", "name", "tool_calls", "tool_call_id", "extra_content"]);
const GEMINI_CALL = new Set(["id", "type", "function", "extra_content", "index"]);

/** Google's refusal as its OpenAI-compatible endpoint sends it: an array holding one `error`. */
const geminiError = (message: string): FakeHttpError => ({
  status: 400,
  body: [{ error: { code: 400, message, status: "INVALID_ARGUMENT", details: [{ "@type": "type.googleapis.com/google.rpc.BadRequest", fieldViolations: [{ description: message }] }] } }],
});
const unknownName = (name: string, at?: string) =>
  geminiError(`Invalid JSON payload received. Unknown name "${name}"${at === undefined ? "" : ` at '${at}'`}: Cannot find field.`);

function checkGemini(body: FakeChatRequestBody, issued: IssuedByProvider): FakeHttpError | undefined {
  for (const key of Object.keys(body)) if (!GEMINI_TOP.has(key)) return unknownName(key);
  for (const [index, message] of body.messages.entries()) {
    for (const key of Object.keys(message)) if (!GEMINI_MESSAGE.has(key)) return unknownName(key, `messages[${index}]`);
    for (const [position, call] of (message.tool_calls ?? []).entries()) {
      for (const key of Object.keys(call)) if (!GEMINI_CALL.has(key)) return unknownName(key, `messages[${index}].tool_calls[${position}]`);
    }
  }
  for (const message of currentTurn(body.messages)) {
    const first = message.role === "assistant" ? message.tool_calls?.[0] : undefined;
    if (first === undefined) continue;
    const signature = (first.extra_content as { google?: { thought_signature?: unknown } } | undefined)?.google?.thought_signature;
    const known = typeof signature === "string" && (signature === GEMINI_SKIP_SIGNATURE || issued.signatures === undefined || issued.signatures.has(signature));
    if (!known) {
      return geminiError(`Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${first.function.name}\` , position ${body.messages.indexOf(message) + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`);
    }
  }
  return undefined;
}

function checkDeepSeek(body: FakeChatRequestBody): FakeHttpError | undefined {
  for (const message of currentTurn(body.messages)) {
    if (message.role !== "assistant" || (message.tool_calls?.length ?? 0) === 0) continue;
    if (typeof message.reasoning_content !== "string" || message.reasoning_content === "") {
      return { status: 400, body: { error: { message: "The reasoning_content in the thinking mode must be passed back to the API.", type: "invalid_request_error", param: null, code: "invalid_request_error" } } };
    }
  }
  return undefined;
}

const MISTRAL_TOP = new Set(["model", "messages", "temperature", "top_p", "max_tokens", "stream", "stop", "random_seed", "response_format", "tools", "tool_choice", "presence_penalty", "frequency_penalty", "n", "prediction", "parallel_tool_calls", "prompt_mode", "safe_prompt"]);
const MISTRAL_MESSAGE: Record<string, Set<string>> = {
  system: new Set(["role", "content"]),
  user: new Set(["role", "content"]),
  assistant: new Set(["role", "content", "tool_calls", "prefix"]),
  tool: new Set(["role", "content", "tool_call_id", "name"]),
};
const MISTRAL_CALL = new Set(["id", "type", "function", "index"]);

/** Mistral's 422: pydantic's `extra_forbidden` with the path of the field. */
const extraForbidden = (loc: Array<string | number>, input: unknown): FakeHttpError => ({
  status: 422,
  body: { object: "error", message: { detail: [{ type: "extra_forbidden", loc: ["body", ...loc], msg: "Extra inputs are not permitted", input }] }, type: "invalid_request_message_error", param: null, code: null },
});

function checkMistral(body: FakeChatRequestBody): FakeHttpError | undefined {
  for (const key of Object.keys(body)) if (!MISTRAL_TOP.has(key)) return extraForbidden([key], body[key]);
  for (const [index, message] of body.messages.entries()) {
    const allowed = MISTRAL_MESSAGE[message.role];
    if (allowed === undefined) return { status: 422, body: { object: "error", message: { detail: [{ type: "union_tag_invalid", loc: ["body", "messages", index], msg: `Input tag '${message.role}' found using 'role' does not match any of the expected tags: 'system', 'user', 'assistant', 'tool'` }] }, type: "invalid_request_message_error", param: null, code: null } };
    for (const key of Object.keys(message)) if (!allowed.has(key)) return extraForbidden(["messages", index, message.role, key], (message as unknown as Record<string, unknown>)[key]);
    for (const [position, call] of (message.tool_calls ?? []).entries()) {
      for (const key of Object.keys(call)) if (!MISTRAL_CALL.has(key)) return extraForbidden(["messages", index, "assistant", "tool_calls", position, key], (call as Record<string, unknown>)[key]);
    }
  }
  return undefined;
}
