/**
 * What the LLM client makes of a server's refusal: the transport's error for that HTTP response,
 * through the client's own mapping (src/llm/errors.ts). Given to the in-process FakeSummarizer,
 * which models only the server (its window, its 400 body) and never decides what the engine sees.
 */
import { LlmHttpError, toLlmError } from "../../src/llm/errors.js";
import type { ServerRefusal } from "../fakes/fake-summarizer.js";

export const asClientError = (refusal: ServerRefusal): Error =>
  toLlmError(new LlmHttpError(refusal.status, new Headers({ "content-type": "application/json" }), JSON.stringify(refusal.body)));
