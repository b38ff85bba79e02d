/**
 * What bench/zero-llm.ts and bench/paced-llm.ts share: an OpenAI-compatible chat server in a
 * process of its own that reads each POST …/chat/completions body whole and hands it to the
 * bench's answer (anything else: 404; an answer that throws, e.g. on a body that is not JSON:
 * 400), the shapes of a request and of a streamed chunk, and the process's life: it prints its
 * URL on the first line of stdout and runs until SIGTERM.
 */
import { createServer, type ServerResponse } from "node:http";

export interface ChatMessage { role?: string; content?: unknown; tool_calls?: unknown[] }
export interface ChatBody { model?: string; stream?: boolean; stream_options?: { include_usage?: boolean }; messages?: ChatMessage[]; tools?: unknown[] }

/** A message's text: a string, or the text parts of a content array. */
export const textOf = (content: unknown): string =>
  typeof content === "string" ? content : Array.isArray(content) ? content.map((part: { text?: unknown }) => (typeof part.text === "string" ? part.text : "")).join("") : "";

/** The fields every completion and chunk of one answer carries. */
export interface ChatBase { id: string; created: number; model: string }

export const chatBase = (id: string, body: ChatBody, fallbackModel: string): ChatBase => ({ id, created: Math.floor(Date.now() / 1_000), model: body.model ?? fallbackModel });

/** One server-sent event of a streamed answer. */
export const sseEvent = (event: object): string => `data: ${JSON.stringify(event)}\n\n`;

/** A chunk carrying `delta` (and a finish reason on the last one). */
export const chunkEvent = (base: ChatBase, delta: object, finish: string | null = null): string =>
  sseEvent({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] });

/** The last chunk before [DONE] when `stream_options.include_usage` asks for it. */
export const usageEvent = (base: ChatBase, usage: object): string => sseEvent({ ...base, object: "chat.completion.chunk", choices: [], usage });

export const SSE_DONE = "data: [DONE]\n\n";

export interface ChatServerOptions {
  /** Answers one request: `raw` is the body as sent. May throw (→ 400) or answer later. */
  answer(raw: string, response: ServerResponse): void;
  /** GET …/stats answers this as JSON. */
  stats?: () => unknown;
  /** How long an idle keep-alive connection stays open (ms); Node's default when unset. */
  keepAliveTimeoutMs?: number;
}

export function serveChat(options: ChatServerOptions): void {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (options.stats && request.method === "GET" && request.url?.endsWith("/stats")) return void response.writeHead(200).end(JSON.stringify(options.stats()));
      if (request.method !== "POST" || !request.url?.endsWith("/chat/completions")) {
        response.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found", type: "invalid_request_error" } }));
        return;
      }
      try {
        options.answer(Buffer.concat(chunks).toString("utf8"), response);
      } catch (error) {
        response.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: String(error), type: "invalid_request_error" } }));
      }
    });
  });
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    console.log(`http://127.0.0.1:${address.port}/v1`);
  });
  process.on("SIGTERM", () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
