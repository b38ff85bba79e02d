/**
 * Which provider family a base URL belongs to: the hosted APIs by host name, local servers by
 * their default port. An endpoint nobody recognises gets the OpenAI profile (the dialect every
 * compatible server is modelled on); `LLM_PROVIDER` or a `models:` entry's `provider` says
 * otherwise when the guess is wrong (a vLLM behind a proxy, Ollama on another port).
 */
import { PROFILES, type ProviderName, type ProviderProfile } from "./profiles.js";

const BY_HOST: ReadonlyArray<readonly [pattern: RegExp, provider: ProviderName]> = [
  [/(^|\.)api\.openai\.com$/, "openai"],
  [/\.openai\.azure\.com$|\.cognitiveservices\.azure\.com$|\.services\.ai\.azure\.com$/, "azure"],
  [/(^|\.)anthropic\.com$/, "anthropic"],
  [/(^|\.)generativelanguage\.googleapis\.com$|aiplatform\.googleapis\.com$/, "gemini"],
  [/(^|\.)deepseek\.com$/, "deepseek"],
  [/(^|\.)mistral\.ai$/, "mistral"],
  [/(^|\.)openrouter\.ai$/, "openrouter"],
  [/(^|\.)groq\.com$/, "groq"],
  [/(^|\.)x\.ai$/, "xai"],
];

/** The servers' default ports: Ollama 11434, LM Studio 1234, vLLM 8000, llama.cpp's llama-server 8080. */
const BY_PORT: Readonly<Record<string, ProviderName>> = { "11434": "ollama", "1234": "lmstudio", "8000": "vllm", "8080": "llamacpp" };

/** The family a base URL belongs to; `openai` when nothing matches. */
export function detectProvider(baseUrl: string): ProviderName {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return "openai";
  }
  const host = url.hostname.toLowerCase();
  const named = BY_HOST.find(([pattern]) => pattern.test(host));
  if (named) return named[1];
  return BY_PORT[url.port] ?? "openai";
}

/** The configured provider, else the detected one, as a profile. */
export function resolveProfile(baseUrl: string, configured?: ProviderName): ProviderProfile {
  return PROFILES[configured ?? detectProvider(baseUrl)];
}
