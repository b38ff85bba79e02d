/**
 * Secrets never go into a summary: a summary lives for weeks in the context of every request, and
 * is read back to whoever is in the chat. The summary prompt forbids copying them; this pass
 * removes the obvious ones from what the summarizer reads and from what it writes, in case it
 * does anyway. It matches well-known key shapes and `password: …`-style assignments only: a
 * pattern broad enough to catch every secret would eat ids and hashes the agent needs.
 */

export const REDACTED = "[REDACTED]";

const KEY_SHAPES: readonly RegExp[] = [
  // OpenAI / Anthropic / OpenRouter style: sk-…, sk-proj-…, sk-ant-api03-…, sk-or-v1-…
  /\bsk-(?:[A-Za-z0-9]+-){0,3}[A-Za-z0-9_-]{20,}/g,
  // GitHub tokens.
  /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{40,}\b/g,
  // Slack tokens.
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/g,
  // AWS access key ids.
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  // Google API keys.
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
  // Telegram bot tokens: 123456789:AA… (35 chars).
  /\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b/g,
  // JSON web tokens.
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  // Stripe keys.
  /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b/g,
  // PEM private keys, whole blocks.
  /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z]+ )?PRIVATE KEY-----|$)/g,
];

/** `Authorization: Bearer …` */
const BEARER = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{16,}/gi;

/**
 * `password: hunter2`, `api_key=…`, `"token": "…"`, `secret = '…'`: the value after a secret-ish
 * key. The value stops at whitespace or a quote.
 */
const ASSIGNMENT =
  /\b((?:pass(?:word|wd|phrase)?|pwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|token|private[_-]?key)["']?\s*[:=]\s*["']?)([^\s"'`,;]{4,})/gi;

/** `my password is hunter2`, `the wifi password is …` */
const PASSWORD_IS = /\b(pass(?:word|phrase)\s+is\s+["']?)([^\s"'`,;]{4,})/gi;

/** The text with obvious secrets replaced by `[REDACTED]`. */
export function redactSecrets(text: string): string {
  let result = text;
  for (const shape of KEY_SHAPES) result = result.replace(shape, REDACTED);
  result = result.replace(BEARER, `$1${REDACTED}`);
  const keepKey = (match: string, key: string, value: string) => (value.startsWith(REDACTED) ? match : `${key}${REDACTED}`);
  result = result.replace(ASSIGNMENT, keepKey);
  result = result.replace(PASSWORD_IS, keepKey);
  return result;
}
