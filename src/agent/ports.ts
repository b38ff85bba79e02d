/**
 * What the turn reaches outside the agent room, as narrow ports: each segment handler names in
 * its signature the few it touches (the chat handler the model, its context engine and the
 * tools; commands the services they speak for). The worker builds one `TurnEngine` — all of
 * them — per process; nothing in the agent takes the whole of it but the orchestrator.
 */
import type { Platform } from "../core/channel.js";
import type { LlmClient } from "../core/llm.js";
import type { QueueStatus } from "../core/queue-wait.js";
import type { BudgetMeter } from "../budget/index.js";
import type { MediaEngine, Speaker } from "../media/index.js";
import type { MemoryService, UserExport, UserRef } from "../memory/index.js";
import type { ModelRouter } from "../models/router.js";
import type { Prices } from "../models/catalogue.js";
import type { ScheduleService } from "../schedule/index.js";
import type { ContextManager } from "../session-context/index.js";
import type { ToolCatalog, TranscriptReader } from "../tools/index.js";

/** Full originals of capped tool outputs, per conversation (`sessionId`). */
export interface ToolOutputStorage {
  save(sessionKey: string, sessionId: string, id: string, text: string): Promise<void>;
  read(sessionKey: string, sessionId: string, id: string, offset: number, length: number): Promise<{ text: string; total: number } | undefined>;
}

/** The clock and the deployment's time settings. */
export interface Clock {
  now(): number;
  /** The deployment's time zone (TZ); a session's own setting wins (`chatTimeZone`). */
  timeZone: string;
  /** MESSAGE_TIMESTAMPS: user messages start with their send time (`toUserMessages`). */
  messageTimeStamps?: boolean;
}

/** The model a segment talks to — switched per segment by /model (`activeEngine`). */
export interface ModelPorts {
  llm: LlmClient;
  context: ContextManager;
  prices: Prices;
}

/** Tools, their output caps, and where capped originals and the transcript are read back. */
export interface ToolPorts {
  tools: ToolCatalog;
  /** TOOL_OUTPUT_MAX_CHARS; scaled down for small windows (outputCapChars). */
  toolOutputMaxChars: number;
  toolOutputs: ToolOutputStorage;
  transcriptReader(sessionKey: string): TranscriptReader;
}

/** Who may answer an approval, and how long it waits. */
export interface ApprovalSettings {
  approval: {
    /** APPROVAL_TIMEOUT_S in ms: an unanswered approval is denied after this. */
    timeoutMs: number;
    /** ADMIN_TELEGRAM_USERS / ADMIN_DISCORD_USERS: may answer anyone's approval, run admin commands. */
    admins: Partial<Record<Platform, readonly string[]>>;
  };
}

/** The chat handler's ports: the tool loop over the model, its context engine and the tools. */
export interface ChatPorts extends Clock, ModelPorts, ToolPorts, ApprovalSettings {
  maxSteps: number;
  /** Check-ins (CHECKIN_*); absent: the defaults. */
  checkin?: { idleMs: number; maxQuietRuns: number; contextTokens: number };
  /** Limits of the children the `delegate` tool runs (DELEGATE_*); absent: the defaults. */
  delegation?: { maxSteps: number; maxTokens: number; maxParallel: number };
  maxOutputTokens: number;
  /** Pictures, voice notes and files (src/media); absent: attachments stay placeholders. */
  media?: MediaEngine;
  /** Long-term memory: whose memory the turn reads (`prepareTurn`); absent: none. */
  memory?: Pick<MemoryService, "prepareTurn">;
  /** Voice replies (/voice, TTS_*); absent: answers are text only. */
  speech?: Speaker;
}

/** What a batch does before its first segment: idle reset, the system prompt, media. */
export interface StartPorts extends Clock {
  systemPrompt: string;
  /** Archive a session idle this long before its next turn; 0 never (IDLE_RESET_HOURS). */
  idleResetMs: number;
  media?: MediaEngine;
  toolOutputs: ToolOutputStorage;
}

/** The services chat commands speak for; each absent one answers "not available here". */
export interface CommandPorts extends Clock, ModelPorts, ApprovalSettings {
  tools: ToolCatalog;
  transcriptLength(sessionKey: string): Promise<number>;
  /** Reminders and scheduled tasks (`/reminders`). */
  schedule?: ScheduleService;
  /** Long-term memory and pins (`/memory`, `/forget`, `/pin`). */
  memory?: MemoryService;
  /** The model catalogue (`/model`); absent: `llm` for every chat. */
  models?: ModelRouter;
  /** Budgets (`/usage`, `/budget`). */
  budget?: BudgetMeter;
  /**
   * `/pair approve CODE` from a chat (admins): src/operator's approval, the one `npm run pairing
   * -- approve` and the web console call, logged with `operator` (`chat:<tg|dc>:<user id>`).
   */
  pairing?: { approve(code: string, operator: string): Promise<{ platform: string; userId: string; userName: string } | undefined> };
  /** `/export`: everything of the user's own (src/memory exportUserData). */
  exportUser?(user: UserRef): Promise<UserExport>;
  /** Named personas of the config file (`/persona <name>`). */
  personas?: Readonly<Record<string, string>>;
  /** `/voice`: whether voice replies can be turned on (a speech endpoint). */
  speech?: Speaker;
  /** `/status`: the turn queue's backlog and this worker's recent queue waits; absent: no queue line. */
  queue?: { status(): Promise<QueueStatus> };
}

/** Who pays (budgets, issue #17) and which model a chat chose (the catalogue). */
export interface RoutingPorts extends ModelPorts {
  /** Every LLM call of a turn is paid by its chat and speaker; absent: no budgets. */
  budget?: BudgetMeter;
  /** The model catalogue; absent: `llm` for every chat. */
  models?: ModelRouter;
}

/** Everything a turn may need besides the session itself; built once per worker process. */
export interface TurnEngine extends ChatPorts, StartPorts, CommandPorts, RoutingPorts {
  memory?: MemoryService;
}
