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
 * - `vllm`: `tool_choice` needs `tools` (its request validation); the chat template renders
 *   whatever pairs it gets.
 * - `ollama`: its /v1 parses each assistant tool call's `arguments` as JSON and refuses the
 *   request when one is not; it checks no pairing.
 */
import type { FakeChatMessage, FakeChatRequestBody, FakeHttpError } from "./fake-llm.js";

export type ProviderRules = "openai" | "anthropic" | "vllm" | "ollama";

const textOf = (content: unknown): string =>
  typeof content === "string" ? content : Array.isArray(content) ? content.map((part: { text?: unknown }) => (typeof part?.text === "string" ? part.text : "")).join("") : "";

const openAiError = (message: string, param: string | null, code: string | null = null): FakeHttpError =>
  ({ status: 400, body: { error: { message, type: "invalid_request_error", param, code } } });
const anthropicError = (message: string): FakeHttpError =>
  ({ status: 400, body: { type: "error", error: { type: "invalid_request_error", message } } });

export function checkProviderRules(rules: ProviderRules | undefined, body: FakeChatRequestBody): FakeHttpError | undefined {
  switch (rules) {
    case undefined:
      return undefined;
    case "openai":
      return checkOpenAi(body);
    case "anthropic":
      return checkAnthropic(body);
    case "vllm":
      return body.tool_choice !== undefined && body.tool_choice !== null && !(body.tools && body.tools.length > 0)
        ? { status: 400, body: { object: "error", message: "When using `tool_choice`, `tools` must be set.", type: "BadRequestError", param: null, code: 400 } }
        : undefined;
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
