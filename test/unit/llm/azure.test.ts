/**
 * The azure profile against a fake that refuses what Azure OpenAI refuses (fake-llm.ts,
 * `rules: "azure"`): the key in an `api-key` header, `api-version` on the deployment API, the
 * deployment in the path. Chat (plain and streamed), the summarizer's client and transcriptions
 * go through the same SDK client (src/llm/sdk.ts); a `models:` entry's `provider` picks it per model.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../config/index.js";
import { PermanentError } from "../../../src/errors.js";
import { classifyLlmError, createSummarizer } from "../../../src/llm/index.js";
import { AZURE_API_VERSION } from "../../../src/llm/sdk.js";
import { createSpeechToText } from "../../../src/llm/transcription.js";
import { silentLogger } from "../../../src/logger.js";
import { createModelRouter } from "../../../src/models/router.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { API_KEY, clientFor, rejectionOf, user } from "./helpers.js";

let azure: FakeLlm;
let origin: string;
beforeAll(async () => {
  azure = await startFakeLlm({ rules: "azure", apiKey: API_KEY });
  origin = new URL(azure.url).origin;
});
afterAll(() => azure.close());

const last = () => azure.requests.at(-1)!;

describe("the azure profile speaks Azure OpenAI", () => {
  it("deployment API: api-key header (no bearer), api-version, the model as the deployment; plain and streamed", async () => {
    const client = clientFor({ url: `${origin}/openai` }, { provider: "azure", model: "gpt-4o-prod" });
    expect((await client.complete({ messages: [user("plain")] })).content).toBe("echo: plain");
    expect(last().url).toBe(`/openai/deployments/gpt-4o-prod/chat/completions?api-version=${AZURE_API_VERSION}`);
    expect(last().headers["api-key"]).toBe(API_KEY);
    expect(last().headers.authorization).toBeUndefined();

    const deltas: string[] = [];
    const streamed = await client.complete({ messages: [user("streamed")], onText: (delta) => deltas.push(delta) });
    expect(streamed.content).toBe("echo: streamed");
    expect(deltas.join("")).toBe("echo: streamed");
    expect(last().url).toBe(`/openai/deployments/gpt-4o-prod/chat/completions?api-version=${AZURE_API_VERSION}`);
  });

  it("takes the api-version and the deployment from the base URL the Azure portal shows", async () => {
    await clientFor({ url: `${origin}/openai/deployments/eu-4o?api-version=2025-04-01-preview` }, { provider: "azure", model: "gpt-4o" }).complete({ messages: [user("hi")] });
    expect(last().url).toBe("/openai/deployments/eu-4o/chat/completions?api-version=2025-04-01-preview");
  });

  it("Azure's /openai/v1 API: the plain path with the api-key header and no version", async () => {
    await clientFor({ url: `${origin}/openai/v1` }, { provider: "azure", model: "gpt-4o" }).complete({ messages: [user("hi")] });
    expect(last().url).toBe("/openai/v1/chat/completions");
    expect(last().headers["api-key"]).toBe(API_KEY);
    expect(last().headers.authorization).toBeUndefined();
  });

  it("the fake refuses the OpenAI dialect (a bearer key) and a deployment request without api-version", async () => {
    const bearer = await rejectionOf(clientFor({ url: `${origin}/openai/v1` }, { provider: "openai", model: "gpt-4o" }).complete({ messages: [user("hi")] }));
    expect(bearer).toBeInstanceOf(PermanentError);
    expect(classifyLlmError(bearer)).toBe("auth");

    const unversioned = await fetch(`${origin}/openai/deployments/gpt-4o/chat/completions`, { method: "POST", headers: { "api-key": API_KEY, "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-4o", messages: [user("hi")] }) });
    expect(unversioned.status).toBe(404);
    expect(await unversioned.json()).toEqual({ error: { code: "404", message: "Resource not found" } });
  });

  it("the summarizer over an azure client goes the same way", async () => {
    const summary = await createSummarizer(clientFor({ url: `${origin}/openai` }, { provider: "azure", model: "gpt-4o-mini-sum" })).summarize({ messages: [user("fold this")], maxTokens: 100 });
    expect(summary.text).toBe("echo: fold this");
    expect(last().url).toBe(`/openai/deployments/gpt-4o-mini-sum/chat/completions?api-version=${AZURE_API_VERSION}`);
    expect(last().headers["api-key"]).toBe(API_KEY);
  });

  it("transcriptions: the same profile (api-key, api-version, the deployment path); the OpenAI dialect is refused", async () => {
    azure.setTranscriber(() => "hello from azure");
    const speechToText = createSpeechToText({ baseUrl: `${origin}/openai`, provider: "azure", apiKey: API_KEY, model: "whisper-prod", timeoutMs: 5_000 });
    expect(await speechToText(new Uint8Array([1, 2, 3]), { name: "note.ogg", mimeType: "audio/ogg" })).toBe("hello from azure");
    const recorded = azure.transcriptions.at(-1)!;
    expect(recorded.headers["api-key"]).toBe(API_KEY);
    expect(recorded.url).toBe(`/openai/deployments/whisper-prod/audio/transcriptions?api-version=${AZURE_API_VERSION}`);

    const asOpenAi = createSpeechToText({ baseUrl: `${origin}/openai`, apiKey: API_KEY, model: "whisper-prod", timeoutMs: 5_000 });
    await expect(asOpenAi(new Uint8Array([1]), { name: "note.ogg" })).rejects.toThrow(/HTTP 401/);
  });
});

describe("a models: entry's provider picks the profile per model", () => {
  it("one catalogue, an Azure deployment beside a plain OpenAI-compatible endpoint", async () => {
    const plain = await startFakeLlm({ rules: "openai", apiKey: "sk-plain-0123456789" });
    try {
      const file = join(mkdtempSync(join(tmpdir(), "longhaul-azure-")), "longhaul.yaml");
      writeFileSync(file, `
models:
  default: local
  list:
    local: { id: some-model, endpoint: "${plain.url}", api_key: "sk-plain-0123456789" }
    corp: { id: gpt-4o-corp, endpoint: "${origin}/openai", provider: azure, api_key: "${API_KEY}" }
`);
      const config = loadConfig({ LONGHAUL_CONFIG_FILE: file, LLM_MAX_RETRIES: "0" });
      const router = createModelRouter({ config, logger: silentLogger, tools: () => [] });
      const corp = router.bind(router.catalogue.find("corp")!);
      const local = router.bind(router.catalogue.find("local")!);

      expect((await corp.llm.complete({ messages: [user("to azure")] })).content).toBe("echo: to azure");
      expect(last().url).toBe(`/openai/deployments/gpt-4o-corp/chat/completions?api-version=${AZURE_API_VERSION}`);
      expect((await local.llm.complete({ messages: [user("to the other")] })).content).toBe("echo: to the other");
      expect(plain.requests.at(-1)!.headers.authorization).toBe("Bearer sk-plain-0123456789");
      expect(plain.requests.at(-1)!.url).toBe("/v1/chat/completions");
    } finally {
      await plain.close();
    }
  });
});
