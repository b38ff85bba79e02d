/**
 * A fake of the Telegram Bot API over real HTTP, for grammY pointed at it with `client.apiRoot`,
 * at least as strict as Telegram where our code meets it:
 * - `/bot<token>/<method>`, answers in the Bot API's shapes, 401 for a wrong token;
 * - getUpdates is a real long poll honouring `offset` (a confirmed offset forgets the updates
 *   below it for good); a newer getUpdates terminates a pending one with 409, and getUpdates
 *   while a webhook is set is a 409, as Telegram does; `allowed_updates` (of getUpdates or
 *   setWebhook) is kept like Telegram keeps it, and updates of other types are never delivered;
 * - sendMessage validates HTML with an independent model of tdlib's parser (telegram-html.ts),
 *   drops the links Telegram drops (silently), counts the 4,096 limit in UTF-16 units after
 *   parsing, and records what the user would SEE (`visible`);
 * - rate limits: a token bucket per chat (bursts of 3, then 1 message/s), 20 in any minute into a
 *   group, 30 in any second overall, answered with 429 and `retry_after`; edits count like
 *   messages. A chat that keeps sending while told to wait earns a long penalty (`abuseAfter`
 *   requests inside its retry_after: 120 s), as bots that ignore flood control get on Telegram
 *   ("retry after 126"); `penalties` lists them, `rateLimited()` every 429 answered;
 * - the chats themselves (fake-telegram-chats.ts, `chats`): a bot removed from a chat or blocked
 *   answered 403, a restricted one 400 "not enough rights", forum topics that are closed (TOPIC_CLOSED),
 *   deleted or never there ("message thread not found"), the reactions a chat allows (getChat's
 *   `available_reactions`; others answered REACTION_INVALID);
 * - privacy mode: group messages a privacy-mode bot may not see are never delivered (`withheld`);
 * - entities: at most 100 kept per message (`visible.droppedEntities` counts the rest, shown
 *   unformatted); 400 ENTITIES_TOO_LONG past ~9,500 characters of markup source;
 * - editMessageText: 400 "message is not modified" for the same text and keyboard, "message to
 *   edit not found" for a message that was deleted (`deleteByUser`, deleteMessage) or never
 *   sent, the 4,096 limit after entity parsing; `chatView` is what the chat shows in the end;
 * - the 48-hour window: a message sent 48 hours ago or more (`age` makes one that old) can no
 *   longer be edited ("message can't be edited") nor deleted ("message can't be deleted for
 *   everyone"), as the Bot API's deleteMessage says and bots meet on edits;
 * - supergroup migration: after `migrateChat`, calls to the old id fail with 400
 *   "group chat was upgraded to a supergroup chat" and `parameters.migrate_to_chat_id`;
 * - notifications: an accepted sendMessage/sendDocument notifies unless `disable_notification`
 *   (recorded as `notified`; `notifications(chatId)`); an edit never notifies;
 * - sendVoice: an Ogg/Opus upload, a caption of at most 1,024 characters after parsing; chats in
 *   `voiceForbidden` answer VOICE_MESSAGES_FORBIDDEN (fake-telegram-voice.ts);
 * - setWebhook / deleteWebhook / getWebhookInfo (with injectable delivery errors), getFile and
 *   the file download route `/file/bot<token>/<path>`, leaveChat.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { dirname } from "node:path";
import type { AddressInfo } from "node:net";
import type { Message, Update, UserFromGetMe } from "grammy/types";
import { parseTelegramHtml, type ParsedHtml } from "./telegram-html.js";
import { multipartBoundary, parseMultipart, type Multipart, type MultipartFile } from "./multipart.js";
import { FakeTelegramChats } from "./fake-telegram-chats.js";
import { checkVoice, type AcceptedVoice } from "./fake-telegram-voice.js";
import { AnswerTraps, type AnswerTrap, type ApiFailure } from "./fake-telegram-answers.js";

export { parseTelegramHtml, checkedLink, visibleText, type ParsedHtml, type ParsedEntity } from "./telegram-html.js";
export type { ApiFailure } from "./fake-telegram-answers.js";

export interface RecordedCall {
  method: string;
  payload: Record<string, unknown>;
  at: number;
  /** sendMessage that Telegram accepted: what the user sees. */
  visible?: ParsedHtml;
  /** The files of a multipart upload, as received. */
  files?: MultipartFile[];
  /** Answered 429 (flood control) with this retry_after, in seconds. */
  retryAfter?: number;
  /** Which flood rule answered 429: the chat's bucket, the group's minute, the bot's second, or a retry_after still running. */
  floodRule?: "chat" | "group" | "global" | "blocked";
  /** sendVoice that Telegram accepted: the voice note the user can play, with its caption. */
  voice?: AcceptedVoice;
  /** sendDocument that Telegram accepted: the file the user can open. */
  document?: { fileName: string; bytes: Buffer };
  /**
   * A message Telegram accepted and the recipients were notified of (a new message without
   * `disable_notification`); false for silent sends. Edits never notify: never set on them.
   */
  notified?: boolean;
}


export interface RateLimits {
  /** Messages a chat may receive at once before the 1/s pace applies. @defaultValue 3 */
  burst: number;
  perChatPerSecond: number;
  groupPerMinute: number;
  globalPerSecond: number;
  /** Requests to a chat inside its retry_after before the long penalty. @defaultValue 3 */
  abuseAfter?: number;
  /** The long penalty, in seconds. @defaultValue 120 */
  penaltySeconds?: number;
}

/** Bots may upload files up to 50 MB (sendDocument and the other send methods). */
export const TELEGRAM_UPLOAD_LIMIT = 50 * 1024 * 1024;

/** Bots may download files up to 20 MB (getFile refuses larger ones). */
export const TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024;

export const FAKE_TOKEN = "123456789:TEST-token_for-fake-telegram";

export const FAKE_BOT: UserFromGetMe = {
  id: 7000000001,
  is_bot: true,
  first_name: "Longhaul",
  username: "longhaul_test_bot",
  can_join_groups: true,
  can_read_all_group_messages: false,
  supports_inline_queries: false,
  can_connect_to_business: false,
  has_main_web_app: false,
  has_topics_enabled: false,
  allows_users_to_create_topics: false,
  can_manage_bots: false,
  supports_join_request_queries: false,
};

/** Message fields that make a group message content (not a service message) for privacy mode. */
const MEDIA_OR_TEXT = ["text", "caption", "photo", "video", "animation", "document", "audio", "voice", "video_note", "sticker", "location", "venue", "contact", "poll", "dice", "story"];

/** Part of Telegram's standard reaction emoji (ReactionTypeEmoji). */
const STANDARD_REACTIONS: ReadonlySet<string> = new Set(["👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🎉", "🤩", "🙏", "👌", "😍", "💯", "🤣", "⚡", "🏆", "💔", "🤨", "😐", "😴", "😭", "🤓", "👻", "👀", "🙈", "😇", "🤝", "✍", "🤗", "🫡", "🆒", "😎", "🤷"]);

/** A message keeps at most this many formatting entities (rubenlagus/TelegramBots#854). */
export const ENTITY_LIMIT = 100;
/** Markup source past which Telegram answers ENTITIES_TOO_LONG (approximately; see checkMessage). */
export const ENTITIES_SOURCE_LIMIT = 9_500;

const DEFAULT_LIMITS: RateLimits = { burst: 3, perChatPerSecond: 1, groupPerMinute: 20, globalPerSecond: 30 };

interface Waiter {
  offset: number;
  limit: number;
  respond: (updates: Update[]) => void;
  conflict: () => void;
}

export class FakeTelegram {
  readonly calls: RecordedCall[] = [];
  private readonly updates: Update[] = [];
  private readonly waiters = new Set<Waiter>();
  private readonly failures = new Map<string, ApiFailure[]>();
  /** Calls whose answer a test lost or held back (fake-telegram-answers.ts); `lateAnswers` lists those answered late. */
  readonly traps = new AnswerTraps<RecordedCall>();
  private readonly migrated = new Map<string, number>();
  private readonly files = new Map<string, { path: string; content: Buffer }>();
  private readonly sentAt = new Map<string, number[]>();
  private readonly chatBuckets = new Map<string, { level: number; at: number }>();
  /** Chats told to wait: until when, and how many requests came in anyway. */
  private readonly blocked = new Map<string, { until: number; violations: number; penalized: boolean }>();
  /** Long penalties given for sending through a retry_after, in order. */
  readonly penalties: Array<{ chatId: string; at: number; seconds: number }> = [];
  private readonly globalSentAt: number[] = [];
  private webhook = { url: "", secret: "", lastErrorDate: 0, lastErrorMessage: "" };
  private nextUpdateId = 100_000;
  /** The update types the bot asked for; Telegram's default leaves out chat_member and reactions. */
  private allowedUpdates: readonly string[] | undefined;
  private answerSoon: NodeJS.Immediate | undefined;
  private nextMessageId = 1;
  /** Messages the bot sent, by `chatId:messageId` (for edits and button presses). */
  readonly botMessages = new Map<string, Message>();
  /** Unanswered presses: query id → when it was pressed (Unix ms). */
  private readonly openQueries = new Map<string, number>();
  private nextQueryId = 1;
  /** The highest offset a poller confirmed: Telegram forgets every update below it. */
  confirmedOffset = 0;
  /** The highest update id handed to a poller (fetched, not necessarily confirmed). */
  fetchedUpTo = 0;
  limits: RateLimits | undefined;
  /** The command menus set, by scope (JSON of the BotCommandScope; `{"type":"default"}` without one). */
  readonly commandMenus = new Map<string, Array<{ command: string; description: string }>>();
  /** Membership, rights, forum topics and allowed reactions of each chat (fake-telegram-chats.ts). */
  readonly chats = new FakeTelegramChats();
  /** Forum topics closed by an admin (`chatId:threadId`): sends into them answer TOPIC_CLOSED. */
  readonly closedTopics = this.chats.closedTopics;
  /** Forum topics deleted (`chatId:threadId`): sends into them answer "message thread not found". */
  readonly deletedTopics = this.chats.deletedTopics;
  /** Group updates privacy mode kept from the bot, in order. */
  readonly withheld: Update[] = [];
  /** Chats where the bot is an administrator: it sees every message there, privacy mode or not. */
  readonly adminIn = new Set<string>();
  /** The bot's reactions, by `chatId:messageId`. */
  readonly reactions = new Map<string, string[]>();
  /** Chats whose user forbids voice notes (privacy settings): sendVoice answers VOICE_MESSAGES_FORBIDDEN. */
  readonly voiceForbidden = new Set<string>();
  /** Methods this server lacks, like a third-party Bot API emulator (see `handle`). */
  readonly unsupported = new Set<string>();

  private constructor(private readonly server: Server, readonly apiRoot: string, readonly token: string, readonly bot: UserFromGetMe, limits: RateLimits | undefined) {
    this.limits = limits;
  }

  static async start(options: { token?: string; bot?: UserFromGetMe; rateLimits?: RateLimits | false } = {}): Promise<FakeTelegram> {
    let fake: FakeTelegram | undefined;
    // Many chats at once over kept-alive sockets: an idle socket is never closed under a client
    // about to reuse it (keepAliveTimeout above any client's), and the accept queue is deep.
    const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0, headersTimeout: 70_000 }, (request, response) => {
      fake?.handle(request, response).catch((error: unknown) => {
        if (!response.headersSent) response.writeHead(400, { "content-type": "application/json" });
        response.end(JSON.stringify({ ok: false, error_code: 400, description: `Bad Request: ${String(error)}` }));
      });
    });
    await new Promise<void>((resolve) => server.listen({ port: 0, host: "127.0.0.1", backlog: 4096 }, resolve));
    const { port } = server.address() as AddressInfo;
    const limits = options.rateLimits === false ? undefined : (options.rateLimits ?? DEFAULT_LIMITS);
    fake = new FakeTelegram(server, `http://127.0.0.1:${port}`, options.token ?? FAKE_TOKEN, options.bot ?? FAKE_BOT, limits);
    return fake;
  }

  /**
   * What a chat shows now: the bot's messages that were not deleted, in the order they were
   * sent, each with its current (last edited) text.
   */
  chatView(chatId: number | string): Array<{ messageId: number; text: string; edited: boolean }> {
    return [...this.botMessages.entries()]
      .filter(([key]) => key.startsWith(`${Number(chatId)}:`))
      .map(([, message]) => ({ messageId: message.message_id, text: (message as { text?: string }).text ?? "", edited: (message as { edit_date?: number }).edit_date !== undefined }));
  }

  /** Makes a message of the bot `seconds` older (its `date`): past 48 hours it can no longer be edited or deleted. */
  age(chatId: number | string, messageId: number, seconds: number): void {
    const message = this.botMessages.get(`${Number(chatId)}:${messageId}`);
    if (!message) throw new Error(`fake telegram: the bot sent no message ${messageId} to ${chatId}`);
    this.botMessages.set(`${Number(chatId)}:${messageId}`, { ...message, date: message.date - seconds });
  }

  /** The user (or an admin) deletes a message of the bot: later edits of it fail as on Telegram. */
  deleteByUser(chatId: number | string, messageId: number): void {
    this.botMessages.delete(`${Number(chatId)}:${messageId}`);
  }

  callsOf(method: string): RecordedCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  /** Telegram gives `chatId` a flood penalty of `seconds` now (as after sending through a retry_after). */
  penalize(chatId: number | string, seconds: number, now = Date.now()): void {
    this.blocked.set(String(chatId), { until: now + seconds * 1000, violations: 0, penalized: true });
    this.penalties.push({ chatId: String(chatId), at: now, seconds });
  }

  /** Calls answered 429 (to `chatId` when given), in order. */
  rateLimited(chatId?: number | string): RecordedCall[] {
    return this.calls.filter((call) => call.retryAfter !== undefined && (chatId === undefined || String(call.payload.chat_id) === String(chatId)));
  }

  /** sendMessage calls Telegram accepted (to `chatId` when given), in order: what users received. */
  delivered(chatId?: number | string): RecordedCall[] {
    return this.calls.filter((call) => call.method === "sendMessage" && call.visible !== undefined && (chatId === undefined || String(call.payload.chat_id) === String(chatId)));
  }

  /** The accepted messages that notified the chat (`chatId` when given), in order: what made a phone buzz. */
  notifications(chatId?: number | string): RecordedCall[] {
    return this.calls.filter((call) => call.notified === true && (chatId === undefined || String(call.payload.chat_id) === String(chatId)));
  }

  /**
   * The next call of `method` that matches `predicate` gets no answer: the connection is
   * dropped (`hang`: left open, never answered). `applied`: Telegram performed it first — the
   * message was sent or edited, only the answer was lost. `answer`: instead of dropping the
   * connection, this error is answered (a 5xx after acting).
   */
  loseAnswer(method: string, options: { applied: boolean; hang?: boolean; predicate?: (call: RecordedCall) => boolean; answer?: ApiFailure }): void {
    this.traps.add({ method, applied: options.applied, hang: options.hang === true, predicate: options.predicate ?? (() => true), ...(options.answer ? { answer: options.answer } : {}) });
  }

  /** The next call of `method` that matches `predicate` is performed at once and answered `ms` later (past a client's deadline). */
  holdAnswer(method: string, ms: number, predicate: (call: RecordedCall) => boolean = () => true): void {
    this.traps.add({ method, applied: true, hang: false, predicate, answerAfterMs: ms });
  }

  /** The next call of `method` fails with this Bot API error (queue several to fail several). */
  failNext(method: string, failure: ApiFailure): void {
    this.failures.set(method, [...(this.failures.get(method) ?? []), failure]);
  }

  /** Queues a message update like Telegram builds it; returns the update. */
  pushMessage(fields: Partial<Message> & { chat: Message["chat"] }): Update {
    const message = {
      message_id: this.nextMessageId++,
      date: Math.floor(Date.now() / 1000),
      from: { id: Number(fields.chat.id) > 0 ? Number(fields.chat.id) : 42, is_bot: false, first_name: "Ada" },
      ...fields,
    } as Message;
    const update = { update_id: this.nextUpdateId++, message } as Update;
    this.pushUpdate(update);
    return update;
  }

  /**
   * A press on a button of a message the bot sent, as Telegram delivers it (callback_query
   * with the whole message). The query must be answered once (answerCallbackQuery), within 15 s
   * (`agePress` makes it older).
   */
  pushCallbackQuery(from: { id: number; first_name: string; last_name?: string }, chatId: number, messageId: number, data: string): Update {
    const message = this.botMessages.get(`${chatId}:${messageId}`);
    if (!message) throw new Error(`fake telegram: the bot sent no message ${messageId} to ${chatId}`);
    const id = String(this.nextQueryId++);
    this.openQueries.set(id, Date.now());
    const update = { update_id: this.nextUpdateId++, callback_query: { id, from: { ...from, is_bot: false }, message, chat_instance: "-77", data } } as Update;
    this.pushUpdate(update);
    return update;
  }

  /** Makes an unanswered press `ms` older (Telegram refuses answers ~15 s after the press). */
  agePress(queryId: string, ms: number): void {
    const pressedAt = this.openQueries.get(queryId);
    if (pressedAt === undefined) throw new Error(`fake telegram: no open query ${queryId}`);
    this.openQueries.set(queryId, pressedAt - ms);
  }

  /**
   * Queues a raw update as is (the same object twice is a re-delivery). Privacy mode: a group
   * message a privacy-mode bot (getMe `can_read_all_group_messages: false`, not an admin of the
   * chat: `adminIn`) may not see is never delivered (`withheld` counts them), as on Telegram.
   */
  pushUpdate(update: Update): void {
    if (update.message) this.chats.saw(update.message);
    if (update.message && !this.seesInGroup(update.message)) {
      this.withheld.push(update);
      return;
    }
    this.updates.push(update);
    // Updates queued in the same tick reach a waiting poller as one batch, as Telegram batches them.
    this.answerSoon ??= setImmediate(() => {
      this.answerSoon = undefined;
      for (const waiter of this.waiters) this.answerWaiter(waiter);
    });
  }

  /**
   * Upgrades a group to a supergroup as Telegram does: the old chat gets a `migrate_to_chat_id`
   * service message, the new one a `migrate_from_chat_id` one, and from now on every call to the
   * old id fails with 400 and `migrate_to_chat_id`. → the two service updates.
   */
  migrateChat(fromChatId: number, toChatId: number, title = "Group", by = { id: 42, is_bot: false, first_name: "Ada" }): [Update, Update] {
    this.migrated.set(String(fromChatId), toChatId);
    const oldChat = { id: fromChatId, type: "group" as const, title };
    const newChat = { id: toChatId, type: "supergroup" as const, title };
    return [
      this.pushMessage({ chat: oldChat, from: by, migrate_to_chat_id: toChatId }),
      this.pushMessage({ chat: newChat, from: { id: 1087968824, is_bot: true, first_name: "Group", username: "GroupAnonymousBot" }, sender_chat: newChat, migrate_from_chat_id: fromChatId } as Partial<Message> & { chat: Message["chat"] }),
    ];
  }

  /** A file the bot may download with getFile. */
  addFile(fileId: string, content: Buffer | string, path = `documents/${fileId}.bin`): void {
    this.files.set(fileId, { path, content: Buffer.from(content) });
  }

  /** Downloads of the file route so far (`/file/bot<token>/<path>`), by path. */
  readonly downloads: string[] = [];

  /**
   * A self-hosted Bot API server started with `--local` (telegram-bot-api): getFile allows files
   * up to 2,000 MB and answers with the file's absolute path on the server's disk (`dir`, where
   * the file is written), and the HTTP file route serves nothing.
   */
  localMode: { dir: string } | undefined;

  /** Telegram's last failed attempt to reach the webhook, as getWebhookInfo reports it. */
  failWebhookDelivery(message: string, at = Date.now()): void {
    this.webhook.lastErrorDate = Math.floor(at / 1000);
    this.webhook.lastErrorMessage = message;
  }

  get webhookUrl(): string {
    return this.webhook.url;
  }

  /** Sets a webhook as another deployment would (polling over it is then a 409). */
  setWebhookElsewhere(url: string): void {
    this.webhook = { ...this.webhook, url };
  }

  /** Resolves with the first recorded call of `method` matching `predicate` (waits for it). */
  async waitForCall(method: string, predicate: (call: RecordedCall) => boolean = () => true, timeoutMs = 5000): Promise<RecordedCall> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.calls.find((call) => call.method === method && predicate(call));
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no ${method} call within ${timeoutMs} ms; calls: ${this.calls.map((call) => call.method).join(", ")}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Posts an update to a webhook as Telegram does, with the secret header when given. */
  postWebhook(url: string, update: Update, secret?: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const body = JSON.stringify(update);
      const headers: Record<string, string> = { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) };
      if (secret !== undefined) headers["x-telegram-bot-api-secret-token"] = secret;
      const outgoing = httpRequest(url, { method: "POST", headers, agent: false }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      });
      outgoing.on("error", reject);
      outgoing.end(body);
    });
  }

  async close(): Promise<void> {
    if (this.answerSoon) clearImmediate(this.answerSoon);
    for (const waiter of this.waiters) waiter.respond([]);
    this.waiters.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const url = new URL(request.url ?? "/", this.apiRoot);
    let trapped: { trap: AnswerTrap<RecordedCall>; call: RecordedCall } | undefined;
    const write = (status: number, body: unknown) => {
      if (response.destroyed) return;
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    };
    const reply = (status: number, body: unknown) => (trapped ? this.traps.reply(trapped.trap, trapped.call, response, write, status, body) : write(status, body));
    const fail = (failure: ApiFailure) => reply(failure.error_code, { ok: false, ...failure });
    const download = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (download) {
      const file = [...this.files.values()].find((candidate) => candidate.path === download[2]);
      if (download[1] !== this.token || !file || this.localMode) return fail({ error_code: 404, description: "Not Found" });
      this.downloads.push(download[2] ?? "");
      response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(file.content.length) });
      response.end(file.content);
      return;
    }
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!match) return fail({ error_code: 404, description: "Not Found" });
    if (match[1] !== this.token) return fail({ error_code: 401, description: "Unauthorized" });
    const method = match[2] ?? "";
    const body = Buffer.concat(chunks);
    // Uploads (sendDocument with a file) are multipart/form-data: fields, and files named by attach://.
    const boundary = multipartBoundary(request.headers["content-type"]);
    let upload: Multipart | undefined;
    if (boundary !== undefined) {
      // Telegram refuses a bot's upload over 50 MB before reading it as a request.
      if (body.length > TELEGRAM_UPLOAD_LIMIT + 64 * 1024) return fail({ error_code: 413, description: "Request Entity Too Large" });
      const parsed = parseMultipart(body, boundary);
      if ("error" in parsed) return fail({ error_code: 400, description: `Bad Request: ${parsed.error}` });
      upload = parsed;
    }
    const raw = upload ? "" : body.toString("utf8");
    const payload = (upload ? Object.fromEntries(upload.fields) : raw ? JSON.parse(raw) : Object.fromEntries(url.searchParams)) as Record<string, unknown>;
    const call: RecordedCall = { method, payload, at: Date.now(), ...(upload ? { files: upload.files } : {}) };
    this.calls.push(call);
    const trap = this.traps.take(call);
    if (trap) {
      trapped = { trap, call };
      if (!trap.applied) return reply(0, undefined);
    }

    // A Bot API server without this method answers as telegram-test-api does: 500, no Bot API fields.
    if (this.unsupported.has(method)) return reply(500, { message: `API method '${method}' is not supported. Are you sure you're using Telegram Bot API correctly?` });
    const injected = this.failures.get(method)?.shift();
    if (injected) return fail(injected);
    const ok = (result: unknown) => reply(200, { ok: true, result });
    const migratedTo = payload.chat_id === undefined ? undefined : this.migrated.get(String(payload.chat_id));
    if (migratedTo !== undefined) {
      return fail({ error_code: 400, description: "Bad Request: group chat was upgraded to a supergroup chat", parameters: { migrate_to_chat_id: migratedTo } });
    }

    const refused = this.chats.refusal(method, payload);
    if (refused) return fail(refused);

    switch (method) {
      case "getMe":
        return ok(this.bot);
      case "getUpdates":
        if (this.webhook.url !== "") {
          return fail({ error_code: 409, description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first" });
        }
        return this.getUpdates(payload, response, ok, fail);
      case "sendMessage":
        return this.sendMessage(call, ok, fail);
      case "sendDocument":
        return this.sendDocument(call, ok, fail);
      case "sendVoice":
        return this.sendVoice(call, ok, fail);
      case "answerCallbackQuery": {
        // Telegram accepts one answer per query, within about 15 s of the press; it shows at most 200 characters.
        const pressedAt = this.openQueries.get(String(payload.callback_query_id));
        this.openQueries.delete(String(payload.callback_query_id));
        if (pressedAt === undefined || Date.now() - pressedAt > 15_000) return fail({ error_code: 400, description: "Bad Request: query is too old and response timeout expired or query ID is invalid" });
        if (typeof payload.text === "string" && [...payload.text].length > 200) return fail({ error_code: 400, description: "Bad Request: MESSAGE_TOO_LONG" });
        return ok(true);
      }
      case "editMessageText":
        return this.editMessageText(call, ok, fail);
      case "deleteMessage": {
        const key = `${Number(payload.chat_id)}:${Number(payload.message_id)}`;
        const existing = this.botMessages.get(key);
        if (!existing) return fail({ error_code: 400, description: "Bad Request: message to delete not found" });
        if (tooOld(existing)) return fail({ error_code: 400, description: "Bad Request: message can't be deleted for everyone" });
        this.botMessages.delete(key);
        return ok(true);
      }
      case "setWebhook":
        this.rememberAllowedUpdates(payload);
        this.webhook = { url: String(payload.url ?? ""), secret: String(payload.secret_token ?? ""), lastErrorDate: 0, lastErrorMessage: "" };
        return ok(true);
      case "deleteWebhook":
        this.webhook = { url: "", secret: "", lastErrorDate: 0, lastErrorMessage: "" };
        if (payload.drop_pending_updates === true) this.updates.length = 0;
        return ok(true);
      case "getWebhookInfo":
        return ok({
          url: this.webhook.url,
          has_custom_certificate: false,
          pending_update_count: this.updates.filter((update) => update.update_id >= this.confirmedOffset && this.delivers(update)).length,
          ...(this.webhook.lastErrorDate ? { last_error_date: this.webhook.lastErrorDate, last_error_message: this.webhook.lastErrorMessage } : {}),
        });
      case "getFile": {
        const file = this.files.get(String(payload.file_id));
        if (!file) return fail({ error_code: 400, description: "Bad Request: invalid file_id" });
        if (this.localMode) {
          // --local: up to 2,000 MB, and the path is the file's on the server's disk.
          if (file.content.length > 2000 * 1024 * 1024) return fail({ error_code: 400, description: "Bad Request: file is too big" });
          const absolute = `${this.localMode.dir}/${file.path}`;
          mkdirSync(dirname(absolute), { recursive: true });
          writeFileSync(absolute, file.content);
          return ok({ file_id: payload.file_id, file_unique_id: `u${String(payload.file_id)}`, file_size: file.content.length, file_path: absolute });
        }
        // The cloud Bot API lets bots download files up to 20 MB and refuses getFile above.
        if (file.content.length > TELEGRAM_DOWNLOAD_LIMIT) return fail({ error_code: 400, description: "Bad Request: file is too big" });
        return ok({ file_id: payload.file_id, file_unique_id: `u${String(payload.file_id)}`, file_size: file.content.length, file_path: file.path });
      }
      case "setMyCommands": {
        const invalid = invalidBotCommands(payload.commands) ?? invalidScope(payload.scope);
        if (invalid) return fail({ error_code: 400, description: `Bad Request: ${invalid}` });
        this.commandMenus.set(JSON.stringify(payload.scope ?? { type: "default" }), payload.commands as Array<{ command: string; description: string }>);
        return ok(true);
      }
      case "getMyCommands": {
        const invalid = invalidScope(payload.scope);
        if (invalid) return fail({ error_code: 400, description: `Bad Request: ${invalid}` });
        return ok(this.commandMenus.get(JSON.stringify(payload.scope ?? { type: "default" })) ?? []);
      }
      case "setMessageReaction": {
        // Bots set at most one reaction, from Telegram's standard set and the chat's allowed ones.
        const reaction = Array.isArray(payload.reaction) ? (payload.reaction as Array<{ type?: unknown; emoji?: unknown }>) : [];
        if (reaction.length > 1) return fail({ error_code: 400, description: "Bad Request: REACTIONS_TOO_MANY" });
        if (reaction.some((entry) => entry.type !== "emoji" || !STANDARD_REACTIONS.has(String(entry.emoji)))) return fail({ error_code: 400, description: "Bad Request: REACTION_INVALID" });
        if (reaction.some((entry) => !this.chats.allowsReaction(Number(payload.chat_id), String(entry.emoji)))) return fail({ error_code: 400, description: "Bad Request: REACTION_INVALID" });
        this.reactions.set(`${Number(payload.chat_id)}:${Number(payload.message_id)}`, reaction.map((entry) => String(entry.emoji)));
        return ok(true);
      }
      case "getChat":
        return ok(this.chats.describe(Number(payload.chat_id)));
      case "sendChatAction":
      case "leaveChat":
        return ok(true);
      default:
        return fail({ error_code: 404, description: "Not Found" });
    }
  }

  private getUpdates(payload: Record<string, unknown>, response: ServerResponse, ok: (result: unknown) => void, fail: (failure: ApiFailure) => void): void {
    // Telegram allows one poller: a newer getUpdates terminates the one still waiting.
    for (const waiter of [...this.waiters]) waiter.conflict();
    this.rememberAllowedUpdates(payload);
    const offset = Number(payload.offset ?? 0);
    // Telegram forgets updates below a confirmed offset for good.
    if (offset > this.confirmedOffset) this.confirmedOffset = offset;
    const waiter: Waiter = {
      offset,
      limit: Math.min(Number(payload.limit ?? 100), 100),
      respond: ok,
      conflict: () => undefined,
    };
    if (this.answerWaiter(waiter)) return;
    const timeoutSeconds = Number(payload.timeout ?? 0);
    if (timeoutSeconds <= 0) return ok([]);
    const forget = () => {
      clearTimeout(timer);
      this.waiters.delete(waiter);
    };
    waiter.respond = (updates) => {
      forget();
      ok(updates);
    };
    waiter.conflict = () => {
      forget();
      fail({ error_code: 409, description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running" });
    };
    const timer = setTimeout(() => waiter.respond([]), timeoutSeconds * 1000);
    // The poller gave up (grammY aborts the request on stop): forget it.
    response.once("close", forget);
    this.waiters.add(waiter);
  }

  /**
   * What a bot in privacy mode receives in a group (BotFather: "messages that either start with
   * the '/' symbol or mention the bot by username"; replies to it; service messages): a command
   * (bare, or addressed to it), a mention of it, a reply to one of its messages, a service message.
   */
  private seesInGroup(message: Message): boolean {
    const type = (message.chat as Message["chat"] | undefined)?.type;
    if (type !== "group" && type !== "supergroup") return true;
    if (this.bot.can_read_all_group_messages || this.adminIn.has(String(message.chat.id))) return true;
    const text = message.text ?? message.caption;
    if (text === undefined) return message.reply_to_message?.from?.id === this.bot.id || !MEDIA_OR_TEXT.some((field) => field in message);
    const entities = (message.text !== undefined ? message.entities : message.caption_entities) ?? [];
    const username = `@${this.bot.username.toLowerCase()}`;
    const command = entities.find((entity) => entity.type === "bot_command" && entity.offset === 0);
    if (command) {
      const target = text.slice(1, command.length).toLowerCase().split("@")[1];
      // A bare command goes to the bot that last spoke in the group (several bots there).
      if (target === undefined ? this.chats.bareCommandsGoTo(message.chat.id, this.bot.id) : `@${target}` === username) return true;
    }
    if (entities.some((entity) => entity.type === "mention" && text.slice(entity.offset, entity.offset + entity.length).toLowerCase() === username)) return true;
    return message.reply_to_message?.from?.id === this.bot.id;
  }

  /** Omitted: the previous setting stays; an empty list: Telegram's default. */
  private rememberAllowedUpdates(payload: Record<string, unknown>): void {
    if (Array.isArray(payload.allowed_updates)) this.allowedUpdates = payload.allowed_updates.length > 0 ? payload.allowed_updates.map(String) : undefined;
  }

  private delivers(update: Update): boolean {
    const type = Object.keys(update).find((key) => key !== "update_id") ?? "";
    if (this.allowedUpdates) return this.allowedUpdates.includes(type);
    return !["chat_member", "message_reaction", "message_reaction_count"].includes(type);
  }

  private answerWaiter(waiter: Waiter): boolean {
    const pending = this.updates
      .filter((update) => update.update_id >= Math.max(waiter.offset, this.confirmedOffset) && this.delivers(update))
      .slice(0, waiter.limit);
    if (pending.length === 0) return false;
    this.fetchedUpTo = Math.max(this.fetchedUpTo, ...pending.map((update) => update.update_id));
    waiter.respond(pending);
    return true;
  }

  private lastFloodRule: RecordedCall["floodRule"];

  /** Seconds until this chat may receive another message, or 0 (and the send is counted). */
  private floodControl(chatId: string, now: number): number {
    const limits = this.limits;
    if (!limits) return 0;
    const block = this.blocked.get(chatId);
    if (block && block.until > now) {
      this.lastFloodRule = "blocked";
      // Sent while told to wait: counted, and past `abuseAfter` of them the wait becomes long.
      block.violations++;
      if (!block.penalized && block.violations >= (limits.abuseAfter ?? 3)) {
        const seconds = limits.penaltySeconds ?? 120;
        block.penalized = true;
        block.until = now + seconds * 1000;
        this.penalties.push({ chatId, at: now, seconds });
      }
      return Math.max(1, Math.ceil((block.until - now) / 1000));
    }
    const history = (this.sentAt.get(chatId) ?? []).filter((at) => now - at < 60_000);
    const global = this.globalSentAt.filter((at) => now - at < 1_000);
    this.globalSentAt.splice(0, this.globalSentAt.length, ...global);
    let waitMs = 0;
    // A token bucket of `burst` messages refilled at perChatPerSecond.
    const bucket = this.chatBuckets.get(chatId);
    const level = bucket ? Math.min(limits.burst, bucket.level + ((now - bucket.at) / 1000) * limits.perChatPerSecond) : limits.burst;
    if (level < 1) waitMs = ((1 - level) / limits.perChatPerSecond) * 1000;
    if (Number(chatId) < 0 && history.length >= limits.groupPerMinute) waitMs = Math.max(waitMs, (history[history.length - limits.groupPerMinute] ?? now) + 60_000 - now);
    if (global.length >= limits.globalPerSecond) waitMs = Math.max(waitMs, (global[0] ?? now) + 1_000 - now);
    if (waitMs > 0) {
      this.lastFloodRule = level < 1 ? "chat" : global.length >= limits.globalPerSecond ? "global" : "group";
      const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
      this.blocked.set(chatId, { until: now + retryAfter * 1000, violations: 0, penalized: false });
      return retryAfter;
    }
    this.chatBuckets.set(chatId, { level: level - 1, at: now });
    history.push(now);
    this.sentAt.set(chatId, history);
    this.globalSentAt.push(now);
    return 0;
  }

  /** A 429 for this call: recorded on it, answered as Telegram does. */
  private floodWait(call: RecordedCall, retryAfter: number, fail: (failure: ApiFailure) => void): void {
    call.retryAfter = retryAfter;
    call.floodRule = this.lastFloodRule;
    fail({ error_code: 429, description: `Too Many Requests: retry after ${retryAfter}`, parameters: { retry_after: retryAfter } });
  }

  private sendMessage(call: RecordedCall, ok: (result: unknown) => void, fail: (failure: ApiFailure) => void): void {
    const payload = call.payload;
    const parsed = checkMessage(payload, "Bad Request: message is too long");
    if ("error" in parsed) return fail({ error_code: 400, description: parsed.error });
    const retryAfter = this.floodControl(String(payload.chat_id), Date.now());
    if (retryAfter > 0) return this.floodWait(call, retryAfter, fail);
    call.visible = parsed;
    call.notified = payload.disable_notification !== true;
    ok(this.botMessage(Number(payload.chat_id), {
      ...(payload.message_thread_id === undefined ? {} : { message_thread_id: payload.message_thread_id, is_topic_message: true }),
      text: parsed.text,
      ...(payload.reply_markup === undefined ? {} : { reply_markup: payload.reply_markup }),
    }));
  }

  /**
   * sendDocument with an uploaded file (`document: "attach://<part>"`): the part must exist, name
   * its file, hold bytes and be at most 50 MB; a caption obeys the 1,024 limit. Counts against
   * the chat's flood limits like a message.
   */
  private sendDocument(call: RecordedCall, ok: (result: unknown) => void, fail: (failure: ApiFailure) => void): void {
    const payload = call.payload;
    const reference = typeof payload.document === "string" ? /^attach:\/\/(.+)$/.exec(payload.document)?.[1] : undefined;
    if (payload.document === undefined) return fail({ error_code: 400, description: "Bad Request: there is no document in the request" });
    // This fake knows no file ids or URLs: only uploads.
    if (reference === undefined) return fail({ error_code: 400, description: "Bad Request: wrong remote file identifier specified: can't unserialize it. Wrong last symbol" });
    const file = call.files?.find((candidate) => candidate.name === reference);
    // A part with an empty filename is a file all the same (a form field has no filename at all).
    if (!file && payload[reference] !== undefined) return fail({ error_code: 400, description: "Bad Request: file name must be non-empty" });
    if (!file) return fail({ error_code: 400, description: "Bad Request: there is no document in the request" });
    if (file.filename === "") return fail({ error_code: 400, description: "Bad Request: file name must be non-empty" });
    if (file.bytes.length === 0) return fail({ error_code: 400, description: "Bad Request: file must be non-empty" });
    if (file.bytes.length > TELEGRAM_UPLOAD_LIMIT) return fail({ error_code: 413, description: "Request Entity Too Large" });
    if (typeof payload.caption === "string" && payload.caption.length > 1024) return fail({ error_code: 400, description: "Bad Request: message caption is too long" });
    const retryAfter = this.floodControl(String(payload.chat_id), Date.now());
    if (retryAfter > 0) return this.floodWait(call, retryAfter, fail);
    call.document = { fileName: file.filename, bytes: file.bytes };
    call.notified = payload.disable_notification !== true && payload.disable_notification !== "true";
    ok(this.botMessage(Number(payload.chat_id), { document: { file_name: file.filename, file_size: file.bytes.length, file_id: `doc${this.nextMessageId + 1}`, file_unique_id: `udoc${this.nextMessageId + 1}`, mime_type: file.contentType } }));
  }

  /** sendVoice (fake-telegram-voice.ts checks it); counts against the chat's flood limits like a message. */
  private sendVoice(call: RecordedCall, ok: (result: unknown) => void, fail: (failure: ApiFailure) => void): void {
    const payload = call.payload;
    const checked = checkVoice(payload, call.files, this.voiceForbidden.has(String(payload.chat_id)));
    if ("error" in checked) return fail({ error_code: checked.code ?? 400, description: checked.error });
    const retryAfter = this.floodControl(String(payload.chat_id), Date.now());
    if (retryAfter > 0) return this.floodWait(call, retryAfter, fail);
    call.voice = checked;
    call.notified = payload.disable_notification !== true && payload.disable_notification !== "true";
    const id = this.nextMessageId + 1;
    ok(this.botMessage(Number(payload.chat_id), {
      voice: { file_id: `voice${id}`, file_unique_id: `uvoice${id}`, duration: checked.duration ?? 0, mime_type: "audio/ogg", file_size: checked.bytes.length },
      ...(checked.caption ? { caption: checked.caption.text } : {}),
    }));
  }

  /** Voice notes Telegram accepted (to `chatId` when given), in order: what users can play. */
  voices(chatId?: number | string): RecordedCall[] {
    return this.calls.filter((call) => call.method === "sendVoice" && call.voice !== undefined && (chatId === undefined || String(call.payload.chat_id) === String(chatId)));
  }

  /** A message the bot sent to `chatId`, as Telegram returns it, kept for later edits and replies. */
  private botMessage(chatId: number, content: Record<string, unknown>): Message {
    const sent = {
      message_id: this.nextMessageId++,
      date: Math.floor(Date.now() / 1000),
      from: { id: this.bot.id, is_bot: true, first_name: this.bot.first_name, username: this.bot.username },
      chat: chatId > 0 ? { id: chatId, type: "private", first_name: "Ada" } : { id: chatId, type: "supergroup", title: "Group" },
      ...content,
    } as Message;
    this.botMessages.set(`${chatId}:${sent.message_id}`, sent);
    this.chats.botSpoke(chatId, this.bot.id);
    return sent;
  }

  /** Documents Telegram accepted (to `chatId` when given), in order: the files users received. */
  documents(chatId?: number | string): Array<{ fileName: string; bytes: Buffer }> {
    return this.calls.filter((call) => call.method === "sendDocument" && call.document !== undefined && (chatId === undefined || String(call.payload.chat_id) === String(chatId))).map((call) => call.document!);
  }

  private editMessageText(call: RecordedCall, ok: (result: unknown) => void, fail: (failure: ApiFailure) => void): void {
    const payload = call.payload;
    const key = `${Number(payload.chat_id)}:${Number(payload.message_id)}`;
    const existing = this.botMessages.get(key);
    if (!existing) return fail({ error_code: 400, description: "Bad Request: message to edit not found" });
    if (tooOld(existing)) return fail({ error_code: 400, description: "Bad Request: message can't be edited" });
    const parsed = checkMessage(payload, "Bad Request: MESSAGE_TOO_LONG");
    if ("error" in parsed) return fail({ error_code: 400, description: parsed.error });
    const markup = (payload.reply_markup as { inline_keyboard?: unknown[] } | undefined)?.inline_keyboard?.length ? payload.reply_markup : undefined;
    if (existing.text === parsed.text && JSON.stringify(existing.reply_markup) === JSON.stringify(markup)) {
      return fail({ error_code: 400, description: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message" });
    }
    // Edits count against the chat's flood limits like messages do.
    const retryAfter = this.floodControl(String(payload.chat_id), Date.now());
    if (retryAfter > 0) return this.floodWait(call, retryAfter, fail);
    call.visible = parsed;
    const edited = { ...existing, text: parsed.text, edit_date: Math.floor(Date.now() / 1000) } as Message & { reply_markup?: unknown };
    if (markup === undefined) delete edited.reply_markup;
    else edited.reply_markup = markup as never;
    this.botMessages.set(key, edited);
    ok(edited);
  }
}

/** A bot's message this old can no longer be edited or deleted. */
const EDIT_WINDOW_SECONDS = 48 * 60 * 60;
const tooOld = (message: Message) => message.date <= Math.floor(Date.now() / 1000) - EDIT_WINDOW_SECONDS;

/** What Telegram checks in a message's text (after entity parsing) and keyboard; `tooLong` is worded per method. */
function checkMessage(payload: Record<string, unknown>, tooLong: string): ParsedHtml | { error: string } {
  const source = typeof payload.text === "string" ? payload.text : "";
  const parsed: ParsedHtml | { error: string } = payload.parse_mode === "HTML" ? parseTelegramHtml(source) : { text: source, entities: [] };
  if ("error" in parsed) return parsed;
  if (parsed.text.trim().length === 0) return { error: "Bad Request: message text is empty" };
  if (parsed.text.length > 4096) return { error: tooLong };
  // The entities' total size is capped; "a good approximation" is ~9,500 characters of markup
  // (tdlib/telegram-bot-api#165). Stricter than Telegram only where markup is mostly escapes.
  if (parsed.entities.length > 0 && source.length > ENTITIES_SOURCE_LIMIT) return { error: "Bad Request: ENTITIES_TOO_LONG" };
  // Telegram keeps the first 100 entities; the text past them shows unformatted.
  if (parsed.entities.length > ENTITY_LIMIT) {
    const kept = { text: parsed.text, entities: parsed.entities.slice(0, ENTITY_LIMIT), droppedEntities: parsed.entities.length - ENTITY_LIMIT };
    const markupError = checkInlineKeyboard(payload.reply_markup);
    return markupError ? { error: markupError } : kept;
  }
  const markupError = checkInlineKeyboard(payload.reply_markup);
  return markupError ? { error: markupError } : parsed;
}

/** What Telegram checks in an inline keyboard: button text, and callback_data of 1–64 bytes. */
function checkInlineKeyboard(markup: unknown): string | undefined {
  if (markup === undefined) return undefined;
  const rows = (markup as { inline_keyboard?: unknown }).inline_keyboard;
  if (!Array.isArray(rows)) return "Bad Request: object expected as reply markup";
  for (const row of rows) {
    if (!Array.isArray(row)) return "Bad Request: field \"inline_keyboard\" of the InlineKeyboardMarkup should be an Array of Arrays";
    for (const button of row as Array<{ text?: unknown; callback_data?: unknown }>) {
      if (typeof button.text !== "string" || button.text === "") return "Bad Request: text buttons are unallowed in the inline keyboard";
      if (typeof button.callback_data === "string") {
        const bytes = Buffer.byteLength(button.callback_data);
        if (bytes < 1 || bytes > 64) return "Bad Request: BUTTON_DATA_INVALID";
      }
    }
  }
  return undefined;
}

/** BotCommandScope types; chat scopes need a chat_id (and chat_member a user_id). */
function invalidScope(scope: unknown): string | undefined {
  if (scope === undefined) return undefined;
  const { type, chat_id: chatId, user_id: userId } = (scope ?? {}) as { type?: unknown; chat_id?: unknown; user_id?: unknown };
  if (["default", "all_private_chats", "all_group_chats", "all_chat_administrators"].includes(String(type))) return undefined;
  if (type === "chat" || type === "chat_administrators") return chatId === undefined ? "chat_id is empty" : undefined;
  if (type === "chat_member") return chatId === undefined || userId === undefined ? "chat_id or user_id is empty" : undefined;
  return "unsupported bot command scope type";
}

/**
 * What Telegram refuses in a setMyCommands list: at most 100 commands, each 1–32 lowercase
 * letters, digits or underscores, with a description of 1–256 characters.
 */
function invalidBotCommands(commands: unknown): string | undefined {
  if (!Array.isArray(commands) || commands.length > 100) return "BOT_COMMANDS_TOO_MUCH";
  for (const entry of commands as Array<{ command?: unknown; description?: unknown }>) {
    if (typeof entry?.command !== "string" || !/^[a-z0-9_]{1,32}$/.test(entry.command)) return "BOT_COMMAND_INVALID";
    if (typeof entry.description !== "string" || entry.description.trim() === "" || [...entry.description].length > 256) return "BOT_COMMAND_DESCRIPTION_INVALID";
  }
  return undefined;
}
