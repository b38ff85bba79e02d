/**
 * What the LLM client makes of a server's refusal: the openai SDK's error for that HTTP response,
 * through the client's own mapping (src/llm/errors.ts). Given to the in-process FakeSummarizer,
 * which models only the server (its window, its 400 body) and never decides what the engine sees.
 */
import OpenAI from "openai";
import { toLlmError } from "../../src/llm/errors.js";
import type { ServerRefusal } from "../fakes/fake-summarizer.js";

export const asClientError = (refusal: ServerRefusal): Error =>
  toLlmError(OpenAI.APIError.generate(refusal.status, refusal.body as object, undefined, new Headers({ "content-type": "application/json" })));
