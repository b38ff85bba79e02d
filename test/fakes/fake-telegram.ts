/**
 * A small, honest fake of the Telegram Bot API over real HTTP, for grammY pointed at it with
 * `client.apiRoot`. Routes `/bot<token>/<method>`; answers in the Bot API's own shapes
 * (`{ok:true,result}` / `{ok:false,error_code,description,parameters}`); getUpdates is a real
 * long poll that honours `offset`, `limit` and `timeout`; sendMessage checks what Telegram
 * checks (length after entity parsing, empty text, HTML tags balanced and allowed).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Message, Update, UserFromGetMe } from "grammy/types";

export interface RecordedCall {
  method: string;
  payload: Record<string, unknown>;
  at: number;
}

export interface ApiFailure {
  error_code: number;
  description: string;
  parameters?: { retry_after?: number; migrate_to_chat_id?: number };
}

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

const ALLOWED_TAGS = new Set(["b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre", "blockquote", "tg-spoiler", "span", "tg-emoji"]);

/** Telegram's HTML check, as far as we use it: returns the parsed text, or the 400 description. */
export function parseTelegramHtml(html: string): { text: string } | { error: string } {
  const stack: string[] = [];
  let text = "";
  const pattern = /<(\/?)([a-zA-Z][\w-]*)([^>]*)>|<|&(#x[0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);|[^<&]+|&/g;
  for (const match of html.matchAll(pattern)) {
    const [raw, slash, rawName, , entity] = match;
    const at = () => Buffer.byteLength(html.slice(0, match.index)); // Telegram reports byte offsets
    if (raw === "<") return { error: `Bad Request: can't parse entities: Unsupported start tag "" at byte offset ${at()}` };
    if (rawName === undefined) {
      text += entity === undefined ? raw : entity[0] === "#" ? String.fromCodePoint(Number(entity[1] === "x" ? `0${entity.slice(1)}` : entity.slice(1))) : ({ lt: "<", gt: ">", amp: "&", quot: '"' } as Record<string, string>)[entity] ?? raw;
      continue;
    }
    const name = rawName.toLowerCase();
    if (slash) {
      const open = stack.pop();
      if (open !== name) return { error: `Bad Request: can't parse entities: Unmatched end tag at byte offset ${at()}, expected "</${open ?? ""}>", found "</${name}>"` };
    } else {
      if (!ALLOWED_TAGS.has(name)) return { error: `Bad Request: can't parse entities: Unsupported start tag "${name}" at byte offset ${at()}` };
      const parent = stack[stack.length - 1];
      if (parent === "code" || (parent === "pre" && name !== "code")) return { error: `Bad Request: can't parse entities: Entities can't be nested in "${parent}" at byte offset ${at()}` };
      stack.push(name);
    }
  }
  if (stack.length > 0) return { error: `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "${stack[stack.length - 1] ?? ""}"` };
  return { text };
}

interface Waiter {
  offset: number;
  limit: number;
  respond: (updates: Update[]) => void;
}

export class FakeTelegram {
  readonly calls: RecordedCall[] = [];
  private readonly updates: Update[] = [];
  private readonly waiters = new Set<Waiter>();
  private readonly failures = new Map<string, ApiFailure[]>();
  /** Messages the bot sent, by `chatId:messageId` (for edits and button presses). */
  readonly botMessages = new Map<string, Message>();
  private readonly openQueries = new Set<string>();
  private nextQueryId = 1;
  private nextUpdateId = 100_000;
  private nextMessageId = 1;
  private confirmedOffset = 0;
  /** What setWebhook set (getWebhookInfo reports it); "" when none. */
  webhookUrl = "";

  private constructor(private readonly server: Server, readonly apiRoot: string, readonly token: string, readonly bot: UserFromGetMe) {}

  static async start(options: { token?: string; bot?: UserFromGetMe } = {}): Promise<FakeTelegram> {
    let fake: FakeTelegram | undefined;
    const server = createServer((request, response) => {
      fake?.handle(request, response).catch((error: unknown) => {
        if (!response.headersSent) response.writeHead(400, { "content-type": "application/json" });
        response.end(JSON.stringify({ ok: false, error_code: 400, description: `Bad Request: ${String(error)}` }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    fake = new FakeTelegram(server, `http://127.0.0.1:${port}`, options.token ?? FAKE_TOKEN, options.bot ?? FAKE_BOT);
    return fake;
  }

  callsOf(method: string): RecordedCall[] {
    return this.calls.filter((call) => call.method === method);
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
   * with the whole message). The query must be answered once (answerCallbackQuery).
   */
  pushCallbackQuery(from: { id: number; first_name: string; last_name?: string }, chatId: number, messageId: number, data: string): Update {
    const message = this.botMessages.get(`${chatId}:${messageId}`);
    if (!message) throw new Error(`fake telegram: the bot sent no message ${messageId} to ${chatId}`);
    const id = String(this.nextQueryId++);
    this.openQueries.add(id);
    const update = { update_id: this.nextUpdateId++, callback_query: { id, from: { ...from, is_bot: false }, message, chat_instance: "-77", data } } as Update;
    this.pushUpdate(update);
    return update;
  }

  /** Queues a raw update as is (the same object twice is a re-delivery). */
  pushUpdate(update: Update): void {
    this.updates.push(update);
    for (const waiter of this.waiters) this.answerWaiter(waiter);
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
    for (const waiter of this.waiters) waiter.respond([]);
    this.waiters.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const url = new URL(request.url ?? "/", this.apiRoot);
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    const reply = (status: number, body: unknown) => {
      if (response.destroyed) return;
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    };
    const fail = (failure: ApiFailure) => reply(failure.error_code, { ok: false, ...failure });
    if (!match) return fail({ error_code: 404, description: "Not Found" });
    if (match[1] !== this.token) return fail({ error_code: 401, description: "Unauthorized" });
    const method = match[2] ?? "";
    const raw = Buffer.concat(chunks).toString("utf8");
    const payload = (raw ? JSON.parse(raw) : Object.fromEntries(url.searchParams)) as Record<string, unknown>;
    this.calls.push({ method, payload, at: Date.now() });

    const injected = this.failures.get(method)?.shift();
    if (injected) return fail(injected);
    const ok = (result: unknown) => reply(200, { ok: true, result });

    switch (method) {
      case "getMe":
        return ok(this.bot);
      case "getUpdates":
        return this.getUpdates(payload, response, ok);
      case "sendMessage":
        return this.sendMessage(payload, ok, fail);
      case "answerCallbackQuery": {
        // Telegram accepts one answer per query, within about 15 s of the press.
        if (!this.openQueries.delete(String(payload.callback_query_id))) return fail({ error_code: 400, description: "Bad Request: query is too old and response timeout expired or query ID is invalid" });
        return ok(true);
      }
      case "editMessageText":
        return this.editMessageText(payload, ok, fail);
      case "sendChatAction":
      case "setMyCommands":
        return ok(true);
      case "setWebhook":
        this.webhookUrl = String(payload.url ?? "");
        return ok(true);
      case "deleteWebhook":
        this.webhookUrl = "";
        return ok(true);
      case "getWebhookInfo":
        return ok({
          url: this.webhookUrl,
          has_custom_certificate: false,
          pending_update_count: this.updates.filter((update) => update.update_id >= this.confirmedOffset).length,
        });
      default:
        return fail({ error_code: 404, description: "Not Found" });
    }
  }

  private getUpdates(payload: Record<string, unknown>, response: ServerResponse, ok: (result: unknown) => void): void {
    const offset = Number(payload.offset ?? 0);
    // Telegram forgets updates below a confirmed offset for good.
    if (offset > this.confirmedOffset) this.confirmedOffset = offset;
    const waiter: Waiter = { offset, limit: Math.min(Number(payload.limit ?? 100), 100), respond: ok };
    if (this.answerWaiter(waiter)) return;
    const timeoutSeconds = Number(payload.timeout ?? 0);
    if (timeoutSeconds <= 0) return ok([]);
    const finish = (updates: Update[]) => {
      clearTimeout(timer);
      this.waiters.delete(waiter);
      ok(updates);
    };
    waiter.respond = finish;
    const timer = setTimeout(() => finish([]), timeoutSeconds * 1000);
    // The poller gave up (grammY aborts the request on stop): forget it.
    response.once("close", () => {
      clearTimeout(timer);
      this.waiters.delete(waiter);
    });
    this.waiters.add(waiter);
  }

  private answerWaiter(waiter: Waiter): boolean {
    const pending = this.updates.filter((update) => update.update_id >= Math.max(waiter.offset, this.confirmedOffset)).slice(0, waiter.limit);
    if (pending.length === 0) return false;
    waiter.respond(pending);
    return true;
  }

  private sendMessage(payload: Record<string, unknown>, ok: (result: unknown) => void, fail: (failure: ApiFailure) => void): void {
    const parsed = checkMessage(payload, "Bad Request: message is too long");
    if ("error" in parsed) return fail({ error_code: 400, description: parsed.error });
    const chatId = Number(payload.chat_id);
    const sent = {
      message_id: this.nextMessageId++,
      date: Math.floor(Date.now() / 1000),
      from: { id: this.bot.id, is_bot: true, first_name: this.bot.first_name, username: this.bot.username },
      chat: chatId > 0 ? { id: chatId, type: "private", first_name: "Ada" } : { id: chatId, type: "supergroup", title: "Group" },
      ...(payload.message_thread_id === undefined ? {} : { message_thread_id: payload.message_thread_id, is_topic_message: true }),
      text: parsed.text,
      ...(payload.reply_markup === undefined ? {} : { reply_markup: payload.reply_markup }),
    } as Message;
    this.botMessages.set(`${chatId}:${sent.message_id}`, sent);
    ok(sent);
  }

  private editMessageText(payload: Record<string, unknown>, ok: (result: unknown) => void, fail: (failure: ApiFailure) => void): void {
    const key = `${Number(payload.chat_id)}:${Number(payload.message_id)}`;
    const existing = this.botMessages.get(key);
    if (!existing) return fail({ error_code: 400, description: "Bad Request: message to edit not found" });
    const parsed = checkMessage(payload, "Bad Request: MESSAGE_TOO_LONG");
    if ("error" in parsed) return fail({ error_code: 400, description: parsed.error });
    const markup = (payload.reply_markup as { inline_keyboard?: unknown[] } | undefined)?.inline_keyboard?.length ? payload.reply_markup : undefined;
    if (existing.text === parsed.text && JSON.stringify(existing.reply_markup) === JSON.stringify(markup)) {
      return fail({ error_code: 400, description: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message" });
    }
    const edited = { ...existing, text: parsed.text, edit_date: Math.floor(Date.now() / 1000) } as Message & { reply_markup?: unknown };
    if (markup === undefined) delete edited.reply_markup;
    else edited.reply_markup = markup as never;
    this.botMessages.set(key, edited);
    ok(edited);
  }
}

/** What Telegram checks in a message's text (after entity parsing) and keyboard; `tooLong` is worded per method. */
function checkMessage(payload: Record<string, unknown>, tooLong: string): { text: string } | { error: string } {
  const source = typeof payload.text === "string" ? payload.text : "";
  const parsed = payload.parse_mode === "HTML" ? parseTelegramHtml(source) : { text: source };
  if ("error" in parsed) return parsed;
  if (parsed.text.trim().length === 0) return { error: "Bad Request: message text is empty" };
  if (parsed.text.length > 4096) return { error: tooLong };
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
