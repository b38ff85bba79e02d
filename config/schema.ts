/**
 * The configuration contract (SPEC §8). Every key: a type, a default, a one-line description.
 * Keys are the environment variable names themselves, so code, docs and `.env` use one word.
 * `config/example.env` lists them all; a test keeps the two in step.
 */
import { z } from "zod";

const list = (description: string) =>
  z
    .preprocess(
      (value) =>
        typeof value === "string"
          ? value
              .split(",")
              .map((item) => item.trim())
              .filter((item) => item.length > 0)
          : value,
      z.array(z.string()),
    )
    .default([])
    .describe(description);

const ratio = (fallback: number, description: string) =>
  z.coerce.number().gt(0).lte(1).default(fallback).describe(description);

const positiveInt = (fallback: number, description: string) =>
  z.coerce.number().int().positive().default(fallback).describe(description);

/** The provider dialects of SPEC §12 (src/llm/providers/profiles.ts has one profile for each). */
export const LLM_PROVIDERS = ["openai", "azure", "anthropic", "gemini", "deepseek", "mistral", "openrouter", "groq", "xai", "ollama", "vllm", "llamacpp", "lmstudio"] as const;

const optionalText = (description: string) => z.string().min(1).optional().describe(description);

const optionalInt = (description: string) => z.coerce.number().int().positive().optional().describe(description);

const flag = (fallback: boolean, description: string) =>
  z
    .enum(["true", "false", "1", "0", "yes", "no"])
    .default(fallback ? "true" : "false")
    .transform((value) => value === "true" || value === "1" || value === "yes")
    .describe(description);

/** A switch written as on/off (or true/false, 1/0, yes/no). */
const onOff = (fallback: boolean, description: string) =>
  z
    .enum(["on", "off", "true", "false", "1", "0", "yes", "no"])
    .default(fallback ? "on" : "off")
    .transform((value) => value === "on" || value === "true" || value === "1" || value === "yes")
    .describe(description);

/** host:port,host:port,… (IPv6 hosts in brackets). */
const hostPortList = /^\s*(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):\d{1,5}\s*(,\s*(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):\d{1,5}\s*)*$/;

/** An IANA zone this Node's Intl knows (Node ships full ICU). */
const isTimeZone = (zone: string) => {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
};

export const configSchema = z.object({
  // Process and storage
  LONGHAUL_ROLE: z.enum(["all", "gateway", "worker"]).default("all").describe("What this process runs: gateway + workers (all), or one of them"),
  REDIS_URL: z.url({ protocol: /^rediss?$/ }).optional().describe("Redis for queue and sessions; unset: 127.0.0.1:6379, or a private redis-server under DATA_DIR when nothing listens there"),
  REDIS_SENTINELS: z.string().regex(hostPortList, "host:port,host:port,…").optional().describe("Redis Sentinel addresses (host:port,…): connect to the master they name instead of REDIS_URL's host, and follow it through failovers (REDIS_URL may still give the password)"),
  REDIS_SENTINEL_MASTER: z.string().min(1).optional().describe("Name of the master the sentinels watch (sentinel monitor NAME …); required with REDIS_SENTINELS"),
  REDIS_SENTINEL_PASSWORD: optionalText("Password of the sentinels themselves (their requirepass), when they have one"),
  REDIS_CLUSTER_NODES: z.string().regex(hostPortList, "host:port,host:port,…").optional().describe("Redis Cluster seed nodes (host:port,…): run on a Cluster instead of one Redis (REDIS_URL may still give the password, and rediss:// for TLS); not with REDIS_SENTINELS"),
  REDIS_MIN_REPLICAS_ACK: z.coerce.number().int().min(0).optional().describe("Replicas that must hold a message (WAIT; on a Cluster, of each node the message is written to) before it is acknowledged to its platform; unset: 1 with REDIS_SENTINELS, else 0"),
  REDIS_PREFIX: z.string().regex(/^[A-Za-z0-9_-]+$/).default("lh").describe("Prefix of every Redis key and queue, so deployments can share one Redis"),
  DATA_DIR: z.string().min(1).default("./data").describe("Where the private redis-server keeps its AOF and dump files"),
  HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(8080).describe("Port of /healthz, /metrics and the Telegram webhook; 0 disables the HTTP server"),
  HTTP_HOST: z.string().min(1).default("127.0.0.1").describe("Address the HTTP server binds to; 0.0.0.0 to serve other hosts (compose sets it in containers)"),
  METRICS_TOKEN: optionalText("When set, /metrics answers only requests with `Authorization: Bearer <token>` (401 otherwise); unset: /metrics is open on HTTP_HOST"),
  CONSOLE_WEB_TOKEN: z.string().min(16, "at least 16 characters (e.g. `openssl rand -hex 24`)").optional().describe("When set, the operator's web console is served under /console on HTTP_HOST:HTTP_PORT, and this token logs in to it (a secret: never logged); unset: no console"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info").describe("pino log level"),
  WORKER_CONCURRENCY: optionalInt("Turns one worker process runs at once (different sessions); unset: as many as the memory set aside for turns holds at the measured in-flight footprint of one (workers/concurrency.ts; hundreds on any machine with 2 GB or more)"),
  JOB_LOCK_MS: positiveInt(30_000, "BullMQ job lock; a session's lease lasts twice this, so a stall shorter than that never hands a running turn to another worker"),
  DELIVERY_MAX_ATTEMPTS: positiveInt(3, "Failed attempts at one reply (an error the platform did not call temporary) before it is moved to the dead letters (npm run admin -- dead-letters) and the chat gets a notice instead; a temporary error (network, 5xx) counts ten times as many"),
  DELIVERY_STEP_WARN_MS: positiveInt(30_000, "A delivery step (a send, a store write) still unanswered after this long is logged with its chat, reply and part, and again each time this long passes; the platform clients' own timeouts end a hung send, and the delivery job retries it"),
  SHUTDOWN_TIMEOUT_MS: positiveInt(20_000, "Hard exit after SIGTERM if the running turns have not finished or been handed back"),

  // Main model
  LLM_BASE_URL: z.url().default("https://api.openai.com/v1").describe("OpenAI-compatible endpoint of the main model"),
  LLM_API_KEY: optionalText("API key of the main model (falls back to OPENAI_API_KEY)"),
  OPENAI_API_KEY: optionalText("Used when LLM_API_KEY is unset"),
  LLM_MODEL: z.string().min(1).default("gpt-4o-mini").describe("Main model name"),
  LLM_CONTEXT_WINDOW: optionalInt("Main model context window in tokens; unset: a table of known models, else 128000"),
  LLM_MAX_OUTPUT_TOKENS: positiveInt(4096, "max_tokens of each agent step"),
  LLM_PROVIDER: z.enum(LLM_PROVIDERS).optional().describe("The provider dialect of LLM_BASE_URL (which optional fields it takes, which reasoning fields it wants back; src/llm/providers); unset: detected from the URL's host or local port, else openai"),
  LLM_ALTERNATE_ROLES: flag(false, "Send requests with strictly alternating user/assistant roles (neighbouring same-role messages merged), for chat templates that refuse anything else: Mistral, Llama-2 or Gemma behind vLLM (\"conversation roles must alternate\")"),
  LLM_TIMEOUT_MS: positiveInt(120_000, "Timeout of one LLM request"),
  LLM_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2).describe("Retries of one LLM request on 429, 5xx, timeouts (retry-after honoured)"),
  LLM_PRICE_INPUT: z.coerce.number().min(0).default(0).describe("USD per million uncached input tokens, for /usage and budgets (a models: catalogue sets its own)"),
  LLM_PRICE_CACHED_INPUT: z.coerce.number().min(0).default(0).describe("USD per million cached input tokens, for /usage"),
  LLM_PRICE_OUTPUT: z.coerce.number().min(0).default(0).describe("USD per million output tokens, for /usage"),
  SYSTEM_PROMPT: z.string().min(1).default("You are longhaul, a helpful assistant in a long-running chat. Be concise and accurate. Use the recall tool to look up earlier details that were compacted away.").describe("The agent's system prompt (kept byte-stable for prompt caching)"),

  // Summarizer
  SUMMARY_BASE_URL: z.url().optional().describe("Endpoint of the summarizer; unset: LLM_BASE_URL"),
  SUMMARY_API_KEY: optionalText("Key of the summarizer; unset: the main key"),
  SUMMARY_MODEL: optionalText("Summarizer model; unset: LLM_MODEL"),
  SUMMARY_CONTEXT_WINDOW: optionalInt("Summarizer window in tokens; unset: the main model's window when the model is the same, else its table entry"),

  // Context engine
  HYGIENE_THRESHOLD: ratio(0.85, "Pre-turn hygiene compacts a session at this fraction of the window"),
  COMPACTION_THRESHOLD: ratio(0.5, "In-loop compaction runs at this fraction of the window left after the system prompt and tool definitions (plus them)"),
  COMPACTION_TARGET_RATIO: ratio(0.2, "Tail budget as a fraction of the compaction threshold less the system prompt and tool definitions"),
  PROTECT_LAST_N: positiveInt(20, "Recent messages kept verbatim while they fit in 1.5x the tail budget"),
  CACHE_TTL_S: z.coerce.number().int().min(0).default(300).describe("The provider's prompt-cache lifetime: a session idle this long past IDLE_COMPACTION_MARK is compacted in the background; 0 turns idle compaction off"),
  IDLE_COMPACTION_MARK: ratio(0.7, "Idle compaction runs only on a session past this fraction of the in-loop compaction threshold"),
  COMPACTION_NOTICE: z.enum(["off", "brief"]).optional().describe("A line after a compaction (\"🧹 compacted 142 older messages…\"); unset: brief in private chats, off in groups"),

  // Memory
  MEMORY_USER_MAX_CHARS: positiveInt(2_000, "Characters of one user's long-term memory (used only in their private chats unless shared)"),
  MEMORY_CHAT_MAX_CHARS: positiveInt(2_000, "Characters of one group's or channel's long-term memory"),
  MEMORY_PINS_MAX_CHARS: positiveInt(1_000, "Characters of one conversation's pins (/pin), all together"),
  MEMORY_FLUSH_MAX_TOKENS: z.coerce.number().int().min(0).default(512).describe("Output cap of the silent memory flush before a compaction; 0 turns the flush off"),

  // Agent
  AGENT_MAX_STEPS: positiveInt(12, "LLM steps one turn may take before it must answer"),
  TOOL_OUTPUT_MAX_CHARS: positiveInt(50_000, "Tool outputs over this (or a tenth of the context window at ~4 characters a token, if smaller) become a preview; recall pages through the stored original"),
  FETCH_URL_MAX_KB: positiveInt(2_048, "fetch_url reads at most this many kilobytes of a page (after decompression); the rest is left out and the model is told"),
  FETCH_URL_TIMEOUT_MS: positiveInt(20_000, "Deadline of one fetch_url call's download, redirects included (ms)"),
  FETCH_URL_MAX_REDIRECTS: z.coerce.number().int().min(0).default(5).describe("Redirects fetch_url follows, each hop checked like the first (no private, loopback or link-local address)"),
  CHECKIN_IDLE_MIN: positiveInt(30, "A check-in (/checkin) runs only when nobody wrote in the chat for this many minutes; else it waits for the next"),
  CHECKIN_MAX_QUIET: positiveInt(6, "Check-ins in a row with nothing worth saying and nobody writing in between, after which the chat's check-in pauses itself (and says so once); 6 at every 4h is a quiet day"),
  CHECKIN_CONTEXT_TOKENS: positiveInt(2_000, "Latest messages a check-in reads beside the summary and system prompt (tokens); never the whole history"),
  CHECKIN_BUDGET_HEADROOM: z.coerce.number().min(0).max(1).default(0.1).describe("A check-in pauses itself when the chat's budget has less than this share left (0.1: from 90% used)"),
  DELEGATE_MAX_STEPS: positiveInt(6, "LLM steps one sub-task of the delegate tool may take (its last must answer)"),
  DELEGATE_MAX_TOKENS: positiveInt(30_000, "Tokens (prompt + completion, over its steps) one delegate sub-task may use; no step starts past them"),
  DELEGATE_MAX_PARALLEL: positiveInt(3, "delegate sub-tasks of one turn that run at once; the rest wait"),
  APPROVAL_TIMEOUT_S: positiveInt(300, "A tool call waiting for approval (mcp.servers.*.approval) is denied after this many seconds without an answer"),
  BUSY_MODE: z.enum(["collect", "queue", "interrupt"]).default("collect").describe("Messages during a turn: answered together next (collect), one turn each (queue), or restart the turn (interrupt)"),
  STREAMING: z.enum(["off", "progress", "partial"]).default("progress").describe("While a turn runs: nothing but typing (off), one status message edited as the agent works and then into the answer (progress), or the answer as it is written too (partial)"),
  STREAMING_DELAY_MS: z.coerce.number().int().min(0).default(1_000).describe("How long a turn runs before its live preview (STREAMING progress or partial) appears; a quicker answer arrives as one message, with no status message sent before it"),
  TYPING_DELAY_MS: z.coerce.number().int().min(0).default(500).describe("How long a turn runs before the chat shows \"typing…\"; a quicker answer arrives without it (no typing call against the platform's limits); 0 shows it as soon as the turn begins"),
  IDLE_RESET_HOURS: z.coerce.number().min(0).default(0).describe("Archive a session idle this long and start fresh; 0 never"),
  MESSAGE_TIMESTAMPS: flag(true, "Start each user message the model reads with when it was sent, in the chat's time zone (TZ or the chat's own), written once so the prompt cache holds: [Tue 2026-12-01 10:44 Europe/Berlin · 3 days after the previous message]"),
  ARCHIVE_RETENTION_DAYS: z.coerce.number().min(0).default(90).describe("How long an archived conversation (/new, idle reset) is kept; 0 forever"),

  // Time and scheduling
  TZ: z.string().min(1).refine(isTimeZone, "not an IANA time zone known to this Node (e.g. Europe/Berlin)").default("UTC").describe("Default time zone of the chats (IANA name): reminders and tasks are read and confirmed in it, message stamps written in it; a chat may set its own with /timezone"),
  SCHEDULE_MAX_ITEMS: positiveInt(50, "Reminders and scheduled tasks one chat, and one user, may have at a time"),
  SCHEDULE_MIN_INTERVAL_S: positiveInt(300, "Shortest interval of a recurring reminder or task, in seconds"),
  SCHEDULE_MISSED_GRACE_S: z.coerce.number().int().min(60).default(21_600).describe("A recurring run missed by more than this many seconds (downtime) is skipped, not delivered late; one-off items are always delivered"),

  // Ingress
  MAX_MESSAGE_CHARS: positiveInt(16_000, "Longer inbound messages are truncated with a notice"),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(30).describe("Messages one user may send per minute; 0 disables the limit"),

  // Pictures, voice notes and files (docs/media.md)
  LLM_VISION: z.enum(["auto", "on", "off"]).default("auto").describe("Pictures go to the main model as images: auto until the model refuses one (remembered per model), on always, off never (a text placeholder instead)"),
  VISION_DETAIL: z.enum(["auto", "low", "high"]).default("auto").describe("detail of the image parts sent to the model (low: 85 tokens a picture on OpenAI models)"),
  TRANSCRIBE_BASE_URL: z.url().optional().describe("OpenAI-compatible endpoint whose /audio/transcriptions transcribes voice notes; unset: LLM_BASE_URL"),
  TRANSCRIBE_API_KEY: optionalText("Key of the transcription endpoint; unset: the main model's key"),
  TRANSCRIBE_MODEL: z.string().min(1).default("whisper-1").describe("Transcription model"),
  TRANSCRIBE_PRICE_PER_MINUTE: z.coerce.number().min(0).default(0).describe("USD per minute of audio transcribed, counted in budgets (OpenAI whisper-1: 0.006)"),
  TTS_BASE_URL: z.url().optional().describe("OpenAI-compatible endpoint whose /audio/speech speaks voice replies (/voice), asked for Ogg/Opus; unset: LLM_BASE_URL"),
  TTS_API_KEY: optionalText("Key of the speech endpoint; unset: the main model's key"),
  TTS_MODEL: z.string().min(1).default("tts-1").describe("Speech model of voice replies"),
  TTS_VOICE: z.string().min(1).default("alloy").describe("Voice of the speech model"),
  TTS_PRICE_PER_MILLION_CHARS: z.coerce.number().min(0).default(0).describe("USD per million characters spoken, counted in budgets (OpenAI tts-1: 15)"),
  TTS_MAX_CHARS: z.coerce.number().int().min(100).max(4_096).default(1_500).describe("Longest spoken text of one voice reply (OpenAI takes 4,096); a longer answer is spoken up to a sentence end and says the rest is in the text"),
  VOICE_SHOW_TEXT_CHARS: z.coerce.number().int().min(0).default(400).describe("A voice reply also shows its text when the answer is longer than this (or has code, tables or links, or was cut): as the voice note's caption where it fits, else as its own message; 0: always"),
  MAX_AUDIO_MB: positiveInt(25, "Voice notes and audio files larger than this (MB) are refused before download"),
  MAX_FILE_MB: positiveInt(20, "Pictures and documents larger than this (MB) are refused before download (Telegram lets bots fetch at most 20)"),
  MEDIA_TIMEOUT_MS: positiveInt(60_000, "Timeout of one file download, of one transcription, and of one voice reply's speech"),
  EXTRACT_MEMORY_MB: positiveInt(256, "Memory one document's text extraction may add to a worker (MB: its thread's heap limit and a resident-memory watch); past it the file is refused"),
  EXTRACT_TIMEOUT_MS: positiveInt(30_000, "Deadline of one document's text extraction (ms); past it the file is refused"),
  EXTRACT_MAX_PAGES: positiveInt(500, "PDF pages read at most; later pages are left out and the model is told"),
  STORED_ORIGINALS_MB: positiveInt(16, "Stored originals (capped tool outputs, long documents and pastes, read back by recall) one chat keeps, in MB of text across its conversations; past it the oldest are dropped"),
  MAX_DOCUMENT_CHARS: positiveInt(400_000, "Characters kept at most from one document (the model's view plus the original stored for recall); the rest is left out and the model is told"),

  // Telegram
  TELEGRAM_BOT_TOKEN: optionalText("Enables the Telegram adapter"),
  TELEGRAM_API_ROOT: z.url().default("https://api.telegram.org").describe("Bot API root (self-hosted Bot API servers, tests)"),
  TELEGRAM_WEBHOOK_URL: z.url().optional().describe("Public URL of the webhook; unset: long polling"),
  TELEGRAM_WEBHOOK_SECRET: z.string().regex(/^[A-Za-z0-9_-]{1,256}$/).optional().describe("Secret token Telegram sends with webhook calls; required with TELEGRAM_WEBHOOK_URL"),
  TELEGRAM_LOCAL_BOT_API: onOff(false, "TELEGRAM_API_ROOT is a self-hosted Bot API server run with --local: files up to 2,000 MB, read from the path getFile gives (mount the server's directory at the same path for the workers)"),
  TELEGRAM_FORCE_POLLING: onOff(false, "Poll even though a webhook is set for the bot, deleting it (another deployment's webhook stops working)"),
  TELEGRAM_CONFLICT_EXIT_S: positiveInt(300, "Seconds of 409 Conflict (another poller on the token) before the gateway exits non-zero for its supervisor to restart it"),
  SEND_BUDGET: onOff(true, "One send budget per bot token, shared by every gateway through Redis: token buckets for the platform's global and per-chat limits, finals first, previews and typing skipped first (docs/operator.md)"),
  TELEGRAM_SENDS_PER_SECOND: z.coerce.number().gt(1).default(28).describe("At most this many messages and edits of the bot in any second, across all chats (Telegram allows about 30); a tenth of it may go at once"),
  TELEGRAM_GROUP_SENDS_PER_MINUTE: z.coerce.number().gt(3).default(18).describe("At most this many messages and edits into one group in any minute (Telegram allows 20); 3 may go at once"),
  TELEGRAM_STREAMING: z.enum(["off", "progress", "partial"]).optional().describe("STREAMING for Telegram chats; unset: STREAMING"),
  LINK_PREVIEWS: onOff(false, "Show link previews under the bot's replies"),
  ACK_REACTIONS: onOff(false, "React 👀 to a message as soon as it is taken (Telegram and Discord), where the chat allows reactions"),
  ALLOWED_TELEGRAM_USERS: list("Telegram user ids allowed to talk to the bot; empty: pairing"),
  ALLOWED_TELEGRAM_CHATS: list("Telegram group chat ids the bot serves; empty: none"),
  ADMIN_TELEGRAM_USERS: list("Telegram user ids of admins (may answer anyone's tool approval, change anyone's reminders in groups, /model, /persona and /timezone in groups, /budget, /pair approve)"),

  // Discord
  DISCORD_BOT_TOKEN: optionalText("Enables the Discord adapter"),
  DISCORD_API_ROOT: z.url().default("https://discord.com/api").describe("Discord REST root (proxies, tests)"),
  ALLOWED_DISCORD_USERS: list("Discord user ids allowed to talk to the bot; empty: pairing"),
  ALLOWED_DISCORD_CHANNELS: list("Discord guild channel ids the bot serves; empty: none"),
  ADMIN_DISCORD_USERS: list("Discord user ids of admins (may answer anyone's tool approval, change anyone's reminders in groups, /model, /persona and /timezone in groups, /budget, /pair approve)"),
  DISCORD_ALWAYS_ON_CHANNELS: list("Discord channel ids answered without a mention"),
  DISCORD_STREAMING: z.enum(["off", "progress", "partial"]).optional().describe("STREAMING for Discord channels; unset: STREAMING"),
  DISCORD_REQUESTS_PER_SECOND: z.coerce.number().gt(1).default(45).describe("At most this many REST requests of the bot in any second (Discord's global limit is 50); a tenth of it may go at once"),
  DISCORD_PING_ON_REPLY: flag(true, "In Discord guild channels the reply pings the person who asked (never @everyone or roles; DMs never ping)"),

  // Console
  CONSOLE: z.enum(["auto", "on", "off"]).default("auto").describe("Terminal chat: auto turns it on when no platform token is set"),
  CONSOLE_USER: z.string().min(1).default("you").describe("Name of the console user"),
  CONSOLE_EXIT_ON_EOF: flag(true, "With piped stdin, exit once every line has been answered"),
});

/** The flat keys; `Config` (load.ts) adds the nested file sections. */
export type FlatConfig = z.infer<typeof configSchema>;
export type ConfigKey = keyof z.infer<typeof configSchema>;

/** The streaming mode of a platform's chats: its own override, else STREAMING. */
export function streamingModeFor(config: Pick<FlatConfig, "STREAMING" | "TELEGRAM_STREAMING" | "DISCORD_STREAMING">, platform: string): "off" | "progress" | "partial" {
  if (platform === "telegram") return config.TELEGRAM_STREAMING ?? config.STREAMING;
  if (platform === "discord") return config.DISCORD_STREAMING ?? config.STREAMING;
  return config.STREAMING;
}

/** REDIS_MIN_REPLICAS_ACK as it applies: its value, else 1 with Sentinel, else 0 (docs/decisions.md). */
export function minReplicasAckOf(config: Pick<FlatConfig, "REDIS_MIN_REPLICAS_ACK" | "REDIS_SENTINELS">): number {
  return config.REDIS_MIN_REPLICAS_ACK ?? (config.REDIS_SENTINELS ? 1 : 0);
}
