import { Writable } from "node:stream";
import { pino, type Logger } from "pino";
import { createLlmClient, type LlmClientOptions, type OpenAiLlmClient } from "../../../src/llm/index.js";
import type { FakeLlm } from "../../fakes/fake-llm.js";

export const API_KEY = "sk-test-4f9c2a7e1b3d5f60";

/** A client on the fake (or any server with a `url`) with fast defaults: no retries, a 5 s timeout. */
export function clientFor(server: Pick<FakeLlm, "url">, overrides: Partial<LlmClientOptions> = {}): OpenAiLlmClient {
  return createLlmClient({ baseUrl: server.url, apiKey: API_KEY, model: "gpt-4o-mini", timeoutMs: 5_000, maxRetries: 0, ...overrides });
}

/** A pino logger at trace level whose output lines land in `lines`. */
export function capturingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString("utf8"));
      callback();
    },
  });
  return { logger: pino({ level: "trace" }, destination), lines };
}

/** The rejection of `promise`, failing the test when it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error: unknown) {
    if (error instanceof Error) return error;
    throw new Error(`rejected with a non-Error: ${String(error)}`);
  }
  throw new Error("expected a rejection, but the promise resolved");
}

export const user = (content: string) => ({ role: "user" as const, content });
export const system = (content: string) => ({ role: "system" as const, content });
