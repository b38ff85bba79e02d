/**
 * A zero-latency OpenAI-compatible chat server for bench/pipeline.ts, in a process of its own:
 * the least work a server can do per request (read the body, parse it, answer), so that what the
 * bench measures is the pipeline's overhead and not a fake's. It checks nothing: correctness
 * against providers' rules is the tests' job (test/fakes/fake-llm.ts, about 1 ms and 0.5 ms of
 * CPU per request here, which the bench would otherwise add to every turn).
 *
 * The answer is "echo: " + the last user message's text, as the tests' fake gives it: plain
 * JSON, or (`stream: true`) server-sent events in one write — the role, the text in three
 * deltas, the finish reason, the usage when `stream_options.include_usage` asks for it, and
 * `[DONE]`. Usage: characters / 4. The server itself is bench/chat-server.ts's.
 */
import { chatBase, chunkEvent, serveChat, SSE_DONE, textOf, usageEvent, type ChatBody } from "./chat-server.js";

let served = 0;

function answer(raw: string): { body: string; stream: boolean } {
  const request = JSON.parse(raw) as ChatBody;
  const lastUser = [...(request.messages ?? [])].reverse().find((message) => message.role === "user");
  const text = `echo: ${textOf(lastUser?.content)}`;
  const usage = { prompt_tokens: Math.ceil(raw.length / 4), completion_tokens: Math.ceil(text.length / 4), total_tokens: Math.ceil(raw.length / 4) + Math.ceil(text.length / 4) };
  const base = chatBase(`chatcmpl-zero-${++served}`, request, "zero");
  if (!request.stream) {
    return { stream: false, body: JSON.stringify({ ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop", logprobs: null }], usage }) };
  }
  const third = Math.ceil(text.length / 3);
  const events = [
    chunkEvent(base, { role: "assistant", content: "" }),
    ...[0, 1, 2].map((part) => chunkEvent(base, { content: text.slice(part * third, (part + 1) * third) })),
    chunkEvent(base, {}, "stop"),
    ...(request.stream_options?.include_usage ? [usageEvent(base, usage)] : []),
  ];
  return { stream: true, body: `${events.join("")}${SSE_DONE}` };
}

serveChat({
  answer(raw, response) {
    const { body, stream } = answer(raw);
    response.writeHead(200, { "content-type": stream ? "text/event-stream" : "application/json" }).end(body);
  },
});
