/**
 * An OpenAI-compatible chat server paced like a hosted model, for bench/load.ts, in a process of
 * its own: the first token after `TTFT_MS` (default 1,000), then the text streamed at
 * `TOKENS_PER_SECOND` (default 30), a few tokens per write every 100 ms as providers batch them.
 *
 * What a turn does is scripted in the user's message, so the driver knows the model's own time
 * of every message: `⟦m<id> tools=<k>⟧` asks for k tool steps (a `current_time` call each, after
 * the first-token delay) before the answer; the answer is `ANSWER_TOKENS` (default 90) tokens
 * and ends with the markers of every user message since the last answer (a batch is answered
 * once). The summarizer and the memory flush are answered after the first-token delay, plain
 * (a short summary; NO_REPLY). The server itself is bench/chat-server.ts's (GET …/stats: the
 * calls answered, by kind).
 */
import type { ServerResponse } from "node:http";
import { chatBase, chunkEvent, serveChat, SSE_DONE, textOf, usageEvent, type ChatBody } from "./chat-server.js";

const TTFT_MS = Number(process.env.TTFT_MS ?? 1_000);
const TOKENS_PER_SECOND = Number(process.env.TOKENS_PER_SECOND ?? 30);
const ANSWER_TOKENS = Number(process.env.ANSWER_TOKENS ?? 90);
const WRITE_EVERY_MS = 100;

let served = 0;
const stats = { main: 0, tool: 0, summarizer: 0, flush: 0 };
const WORDS = ["the", "queue", "turns", "stream", "tokens", "model", "answer", "session", "waits", "while", "Redis", "keeps", "every", "message"];

function plan(body: ChatBody): { kind: keyof typeof stats; text?: string; toolCall?: boolean } {
  const messages = body.messages ?? [];
  if (textOf(messages[0]?.content).startsWith("You compact the context")) return { kind: "summarizer", text: "## Summary\nThe user asked benchmark questions and got paced answers. Nothing else to keep." };
  if (textOf(messages.at(-1)?.content).startsWith("[Automatic memory flush")) return { kind: "flush", text: "NO_REPLY" };
  const lastAssistantText = messages.findLastIndex((message) => message.role === "assistant" && !message.tool_calls);
  const lastUser = messages.findLastIndex((message) => message.role === "user");
  const since = messages.slice(lastAssistantText + 1);
  const markers = since.filter((message) => message.role === "user").flatMap((message) => [...textOf(message.content).matchAll(/⟦m(\d+) tools=(\d)⟧/g)]);
  const wantedTools = Number(markers.at(-1)?.[2] ?? 0);
  const toolsDone = messages.slice(lastUser + 1).filter((message) => message.role === "tool").length;
  if (toolsDone < wantedTools && (body.tools?.length ?? 0) > 0) return { kind: "tool", toolCall: true };
  const words = Array.from({ length: ANSWER_TOKENS }, (_, index) => WORDS[index % WORDS.length]!);
  return { kind: "main", text: `${words.join(" ")} ${markers.map((match) => `⟦a${match[1]}⟧`).join(" ")}` };
}

function answer(body: ChatBody, response: ServerResponse): void {
  const step = plan(body);
  stats[step.kind]++;
  const base = chatBase(`chatcmpl-paced-${++served}`, body, "paced");
  const promptTokens = Math.ceil(JSON.stringify(body.messages ?? []).length / 4);
  const text = step.text ?? "";
  const pieces = text === "" ? [] : text.split(/(?<= )/);
  const usage = { prompt_tokens: promptTokens, completion_tokens: Math.max(1, pieces.length), total_tokens: promptTokens + Math.max(1, pieces.length) };
  const toolCalls = step.toolCall ? [{ index: 0, id: `call_${served}`, type: "function", function: { name: "current_time", arguments: "{}" } }] : undefined;
  setTimeout(() => {
    if (!body.stream) {
      const message = { role: "assistant", content: toolCalls ? null : text, ...(toolCalls ? { tool_calls: toolCalls.map(({ index: _index, ...call }) => call) } : {}) };
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ...base, object: "chat.completion", choices: [{ index: 0, message, finish_reason: toolCalls ? "tool_calls" : "stop", logprobs: null }], usage }));
      return;
    }
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.write(chunkEvent(base, { role: "assistant", content: "" }));
    const finish = () => {
      response.write(chunkEvent(base, {}, toolCalls ? "tool_calls" : "stop"));
      if (body.stream_options?.include_usage) response.write(usageEvent(base, usage));
      response.end(SSE_DONE);
    };
    if (toolCalls) {
      response.write(chunkEvent(base, { tool_calls: toolCalls }));
      return finish();
    }
    const perWrite = Math.max(1, Math.round((TOKENS_PER_SECOND * WRITE_EVERY_MS) / 1_000));
    let next = 0;
    const write = () => {
      if (response.destroyed) return;
      response.write(chunkEvent(base, { content: pieces.slice(next, next + perWrite).join("") }));
      next += perWrite;
      if (next >= pieces.length) return finish();
      setTimeout(write, WRITE_EVERY_MS);
    };
    write();
  }, TTFT_MS);
}

serveChat({
  answer: (raw, response) => answer(JSON.parse(raw) as ChatBody, response),
  stats: () => stats,
  keepAliveTimeoutMs: 60_000,
});
