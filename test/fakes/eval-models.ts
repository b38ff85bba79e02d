/**
 * Models behind the HTTP fake LLM for `npm run eval`, whose answers come from the request only:
 *
 * - `retentiveSummarizer`: a summarizer that keeps every line it reads (the previous summary,
 *   then each transcript line of `<turns>`, verbatim; without their stamps and ids when verbatim
 *   would run past the length its prompt asks for). Like a server, it stops at max_tokens in
 *   its own unit (3.3 characters a token, not our tokenizer): the content is cut there and
 *   `finish_reason` is "length".
 * - `lossySummarizer`: the same, but it drops every line that holds a digit once the labels
 *   and time stamps are taken off (ids, amounts, dates, paths with numbers are lost).
 * - `retrievalModel(probes)`: a main model that answers a probe with the latest line of its
 *   context (every message but the system prompt and the question) holding each of the probe's
 *   cues, or "I don't know." when none does. It knows a fact exactly when the compacted context
 *   still holds it, and answers with the latest value when a correction survived.
 */
import type { FakeHandler, FakeReply, RecordedRequest } from "./fake-llm.js";
import { textOf } from "./fake-llm.js";

const CHARS_PER_TOKEN = 3.3;
const tokensOf = (text: string) => Math.ceil(text.length / CHARS_PER_TOKEN);

function summaryParts(request: RecordedRequest): { previous: string[]; turns: string[] } {
  const user = request.body.messages.filter((message) => message.role === "user").map((message) => textOf(message.content)).join("\n");
  const previous = /<previous-summary>\n([\s\S]*?)\n<\/previous-summary>/.exec(user)?.[1] ?? "";
  const turns = /<turns[^>]*>\n([\s\S]*?)\n<\/turns>/.exec(user)?.[1] ?? "";
  const lines = (text: string) => text.split("\n").filter((line) => line.trim() !== "");
  return { previous: lines(previous), turns: lines(turns) };
}

function reply(request: RecordedRequest, text: string): FakeReply {
  const maxTokens = request.body.max_tokens ?? (request.body.max_completion_tokens as number | undefined) ?? Number.POSITIVE_INFINITY;
  const prompt = request.body.messages.map((message) => textOf(message.content)).join("\n");
  if (tokensOf(text) > maxTokens) {
    return { text: text.slice(0, Math.floor(maxTokens * CHARS_PER_TOKEN)), finishReason: "length", usage: { prompt_tokens: tokensOf(prompt), completion_tokens: maxTokens } };
  }
  return { text, finishReason: "stop", usage: { prompt_tokens: tokensOf(prompt), completion_tokens: tokensOf(text) } };
}

export const retentiveSummarizer: FakeHandler = (request) => {
  const { previous, turns } = summaryParts(request);
  const lines = [...previous.filter((line) => !line.startsWith("## ")), ...turns];
  // Like a model that heeds the length it is asked for ("about N tokens", in its own unit): every
  // line verbatim while that fits; past it, the lines without their time stamps and ids.
  const asked = lengthAsked(request);
  const verbatim = ["## Critical Context", ...lines].join("\n");
  if (asked === undefined || tokensOf(verbatim) <= asked) return reply(request, verbatim);
  return reply(request, ["## Critical Context", ...lines.map(withoutStamps)].join("\n"));
};

/** The length the summarizer's prompt asks for (`about N tokens`), if it states one. */
function lengthAsked(request: RecordedRequest): number | undefined {
  const text = request.body.messages.map((message) => textOf(message.content)).join("\n");
  const all = [...text.matchAll(/about (\d[\d,]*) tokens/g)].map((match) => Number(match[1]!.replace(/,/g, "")));
  return all.length > 0 ? Math.min(...all) : undefined;
}

/** `[m17] Tue 2026-11-03 09:45 UTC · user: [Tue 2026-11-03 09:45 UTC · 1 hour after …] Dana: text` → `user: Dana: text`. */
const withoutStamps = (line: string) => line.replace(/^\[[^\]]+\](?: [^·]*·)? ?/, "").replace(/(user: )\[[^\]]+\] /, "$1");

export const lossySummarizer: FakeHandler = (request) => {
  const { previous, turns } = summaryParts(request);
  const kept = [...previous.filter((line) => !line.startsWith("## ")), ...turns.map(withoutStamps)].filter((line) => !/\d/.test(line));
  return reply(request, ["## Critical Context", ...kept].join("\n"));
};

export interface CuedProbe {
  question: string;
  cue: readonly string[];
}

export function retrievalModel(probes: readonly CuedProbe[]): FakeHandler {
  return (request) => {
    const messages = request.body.messages;
    const question = textOf(messages.at(-1)?.content);
    const probe = probes.find((candidate) => question.includes(candidate.question));
    if (!probe) return reply(request, "I don't know what you are asking.");
    const lines = messages.slice(1, -1).flatMap((message) => textOf(message.content).split("\n"));
    const found = probe.cue.map((cue) => lines.findLast((line) => line.toLowerCase().includes(cue.toLowerCase()))).filter((line) => line !== undefined);
    return reply(request, found.length > 0 ? found.join("\n") : "I don't know.");
  };
}
