import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../config/index.js";
import { assertModelConfigured, settingsResults } from "../../../src/doctor/settings.js";

const config = (env: Record<string, string>) => loadConfig({ REDIS_URL: "redis://127.0.0.1:1", ...env });

describe("model settings", () => {
  it("refuses OpenAI's default endpoint without a key, with the OpenAI and Ollama examples", () => {
    expect(() => assertModelConfigured(config({}))).toThrow(ConfigError);
    expect(() => assertModelConfigured(config({}))).toThrow(/OpenAI: {2}LLM_API_KEY=sk-\.\.\.[\s\S]*Ollama: {2}LLM_BASE_URL=http:\/\/127\.0\.0\.1:11434\/v1/);
  });

  it("accepts an OpenAI key under either name, and a local server without a key", () => {
    expect(() => assertModelConfigured(config({ LLM_API_KEY: "sk-a" }))).not.toThrow();
    expect(() => assertModelConfigured(config({ OPENAI_API_KEY: "sk-a" }))).not.toThrow();
    expect(() => assertModelConfigured(config({ LLM_BASE_URL: "http://127.0.0.1:11434/v1", LLM_MODEL: "llama3.1" }))).not.toThrow();
  });

  it("needs no model for a gateway alone", () => {
    expect(settingsResults(config({ LONGHAUL_ROLE: "gateway" })).map((result) => result.status)).toEqual(["ok"]);
    expect(settingsResults(config({ LONGHAUL_ROLE: "worker" })).map((result) => result.status)).toEqual(["fail"]);
  });

  it("refuses a summarizer pointed at OpenAI without any key", () => {
    const results = settingsResults(config({ LLM_BASE_URL: "http://127.0.0.1:11434/v1", SUMMARY_BASE_URL: "https://api.openai.com/v1" }));
    expect(results).toEqual([expect.objectContaining({ status: "fail", detail: expect.stringMatching(/summarizer points at OpenAI/) })]);
  });
});
