/**
 * The providers `npm run setup` offers, as data: where each one's OpenAI-compatible endpoint
 * lives, the dialect it is spoken to in (src/llm/providers; LLM_PROVIDER), a model to start
 * with, and whether it needs a key. The base URLs are the ones src/llm/providers/detect.ts and
 * docs/operator.md know; a server on another host or port is the `custom` entry.
 */
import type { ProviderName } from "../llm/index.js";

export interface ProviderPreset {
  /** What `--provider` takes. */
  id: string;
  label: string;
  /** Suggested LLM_BASE_URL; `custom` has none. */
  baseUrl?: string;
  /** LLM_PROVIDER written to the config; unset: detected from the URL (custom). */
  provider?: ProviderName;
  /** Suggested LLM_MODEL; unset: the first model the server lists, else asked. */
  model?: string;
  /** Whether the endpoint refuses requests without a key (local servers usually take none). */
  needsKey: boolean;
  /** Where the key comes from, shown at the key prompt. */
  keyHint?: string;
  /** A local server's window is whatever it was started with, often far below the model's. */
  local: boolean;
}

export const PRESETS: readonly ProviderPreset[] = [
  { id: "openai", label: "OpenAI", baseUrl: "https://api.openai.com/v1", provider: "openai", model: "gpt-4o-mini", needsKey: true, keyHint: "platform.openai.com → API keys", local: false },
  { id: "anthropic", label: "Anthropic (OpenAI-compatible endpoint)", baseUrl: "https://api.anthropic.com/v1", provider: "anthropic", model: "claude-sonnet-4-5", needsKey: true, keyHint: "console.anthropic.com → API keys", local: false },
  { id: "gemini", label: "Google Gemini", baseUrl: "https://generativelanguage.googleapis.com/v1beta/openai", provider: "gemini", model: "gemini-2.5-flash", needsKey: true, keyHint: "aistudio.google.com → Get API key", local: false },
  { id: "deepseek", label: "DeepSeek", baseUrl: "https://api.deepseek.com/v1", provider: "deepseek", model: "deepseek-chat", needsKey: true, keyHint: "platform.deepseek.com → API keys", local: false },
  { id: "openrouter", label: "OpenRouter", baseUrl: "https://openrouter.ai/api/v1", provider: "openrouter", model: "openai/gpt-4o-mini", needsKey: true, keyHint: "openrouter.ai → Keys", local: false },
  { id: "ollama", label: "Ollama (local)", baseUrl: "http://127.0.0.1:11434/v1", provider: "ollama", model: "llama3.1", needsKey: false, local: true },
  { id: "vllm", label: "vLLM (local)", baseUrl: "http://127.0.0.1:8000/v1", provider: "vllm", needsKey: false, local: true },
  { id: "llamacpp", label: "llama.cpp server (local)", baseUrl: "http://127.0.0.1:8080/v1", provider: "llamacpp", needsKey: false, local: true },
  { id: "custom", label: "Another OpenAI-compatible URL", needsKey: false, local: false },
];

export const presetById = (id: string): ProviderPreset | undefined => PRESETS.find((preset) => preset.id === id);

/**
 * The preset an existing configuration was made with: its LLM_PROVIDER and base URL, else the
 * preset whose URL it is, else `custom` for any other URL; undefined without a URL.
 */
export function presetOf(settings: { LLM_PROVIDER?: string | undefined; LLM_BASE_URL?: string | undefined }): ProviderPreset | undefined {
  const url = settings.LLM_BASE_URL;
  if (url === undefined) return settings.LLM_PROVIDER === undefined ? undefined : presetById(settings.LLM_PROVIDER);
  const same = (a: string, b: string) => a.replace(/\/+$/, "") === b.replace(/\/+$/, "");
  return PRESETS.find((preset) => preset.baseUrl !== undefined && same(preset.baseUrl, url) && (settings.LLM_PROVIDER === undefined || settings.LLM_PROVIDER === preset.provider))
    ?? presetById("custom");
}

/** Whether an endpoint on this machine listens on the port longhaul's own HTTP server takes. */
export function clashesWithHttpPort(baseUrl: string, httpPort: number): boolean {
  try {
    const url = new URL(baseUrl);
    const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
    return ["127.0.0.1", "localhost", "[::1]", "0.0.0.0"].includes(url.hostname) && port === httpPort;
  } catch {
    return false;
  }
}
