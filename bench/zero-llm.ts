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
 * `[DONE]`. Usage: characters / 4. Prints its URL on the first line of stdout; runs until killed.
 */
import { createServer } from "node:http";

interface ChatBody {
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages?: Array<{ role?: string; content?: unknown }>;
}

const textOf = (content: unknown): string =>
  typeof content === "string" ? content : Array.isArray(content) ? content.map((part: { text?: unknown }) => (typeof part.text === "string" ? part.text : "")).join("") : "";

let served = 0;

function answer(raw: string): { body: string; stream: boolean } {
  const request = JSON.parse(raw) as ChatBody;
  const lastUser = [...(request.messages ?? [])].reverse().find((message) => message.role === "user");
  const text = `echo: ${textOf(lastUser?.content)}`;
  const usage = { prompt_tokens: Math.ceil(raw.length / 4), completion_tokens: Math.ceil(text.length / 4), total_tokens: Math.ceil(raw.length / 4) + Math.ceil(text.length / 4) };
  const base = { id: `chatcmpl-zero-${++served}`, created: Math.floor(Date.now() / 1_000), model: request.model ?? "zero" };
  if (!request.stream) {
    return { stream: false, body: JSON.stringify({ ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop", logprobs: null }], usage }) };
  }
  const chunk = { ...base, object: "chat.completion.chunk" };
  const third = Math.ceil(text.length / 3);
  const events = [
    { ...chunk, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] },
    ...[0, 1, 2].map((part) => ({ ...chunk, choices: [{ index: 0, delta: { content: text.slice(part * third, (part + 1) * third) }, finish_reason: null }] })),
    { ...chunk, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    ...(request.stream_options?.include_usage ? [{ ...chunk, choices: [], usage }] : []),
  ];
  return { stream: true, body: `${events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join("")}data: [DONE]\n\n` };
}

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    if (request.method !== "POST" || !request.url?.endsWith("/chat/completions")) {
      response.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found", type: "invalid_request_error" } }));
      return;
    }
    try {
      const { body, stream } = answer(Buffer.concat(chunks).toString("utf8"));
      response.writeHead(200, { "content-type": stream ? "text/event-stream" : "application/json" }).end(body);
    } catch (error) {
      response.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: String(error), type: "invalid_request_error" } }));
    }
  });
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  console.log(`http://127.0.0.1:${address.port}/v1`);
});
process.on("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
