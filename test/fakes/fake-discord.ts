import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";
import { FakeGateway, GATEWAY_INTENTS } from "./fake-discord-gateway.js";
import {
  BOT_USER, ChannelBuckets, DEFAULT_GUILD, FAKE_TOKEN, HUMAN_USER, IDS, KNOWN_USERS, compareSnowflakes, contentTypeFor,
  discordLength, parseMentions, snowflakeAt, snowflakeTime, threadChannel, type Payload,
} from "./fake-discord-world.js";

export { BOT_USER, DEFAULT_GUILD, FAKE_TOKEN, HUMAN_USER, IDS, OTHER_USER, snowflakeAt, snowflakeTime, textChannel, threadChannel, type Payload } from "./fake-discord-world.js";

/**
 * A fake of Discord at least as strict as the real one: the REST routes discord.js uses (under
 * /api/v10) on node:http, a CDN for attachments, and the gateway (JSON, no zlib) on `ws`, all on
 * 127.0.0.1:0. Point a client at it with `rest: { api: fake.apiRoot }`.
 *
 * - User messages are built the way Discord builds them: `mentions`, `mention_roles` and
 *   `mention_everyone` are parsed from the content (a payload that claims others is refused),
 *   replies carry `referenced_message` from the channel's history, forwards carry snapshots,
 *   files become attachments served by the CDN with a content-length.
 * - The bot's messages are checked as Discord checks them: length in code points, permissions
 *   (50001 missing access, 50013 missing permissions), archived and locked threads (50083),
 *   5 messages per 5 s per channel (429 with retry_after and the X-RateLimit-* headers),
 *   `enforce_nonce`, replies to unknown messages, and `allowed_mentions` (who got pinged).
 * - The gateway replays missed events on RESUME, refuses a session it forgot with
 *   INVALID_SESSION, sends THREAD_CREATE, and hides content from a client without the
 *   Message Content intent.
 */

export interface RecordedRequest {
  method: string;
  /** Path below /api/v10 (or /cdn for attachments), e.g. `/channels/1/messages`. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: unknown;
  status: number;
}

export interface SendFault {
  status: number;
  /** Seconds, as in Discord's 429 body. */
  retry_after?: number;
  global?: boolean;
  code?: number;
  message?: string;
}

export interface FakeDiscordOptions {
  /** HELLO's heartbeat_interval; real Discord says ~41250. @defaultValue 250 */
  heartbeatIntervalMs?: number;
  guilds?: Payload[];
  /** Answer IDENTIFY by closing the socket with this code (4004 bad token, 4011 sharding required, 4014 disallowed intents). */
  identifyCloseCode?: number;
}

export interface FileUpload {
  name: string;
  content: string | Buffer;
  /** Discord derives it from the extension; null leaves it out, as for unknown extensions. */
  contentType?: string | null;
}

export interface UserMessageOptions {
  /** Files the user attached (a long paste arrives as `message.txt` with empty content). */
  files?: FileUpload[];
  /** The message this one replies to (same channel). */
  replyTo?: string;
  /** Whether the reply pings the replied-to author (the client's "@ On" toggle). @defaultValue false */
  pingReply?: boolean;
  /** Forwards this stored message: the new message carries a snapshot of it. */
  forward?: { channelId: string; messageId: string };
}

export interface ChannelPermissions {
  /** VIEW_CHANNEL; without it every route on the channel answers 50001 Missing Access. */
  view: boolean;
  /** SEND_MESSAGES (SEND_MESSAGES_IN_THREADS); without it sends and typing answer 50013. */
  send: boolean;
}

type Reply = (status: number, payload?: unknown, headers?: Record<string, string>) => void;

const MISSING_ACCESS = { message: "Missing Access", code: 50001 };
const MISSING_PERMISSIONS = { message: "Missing Permissions", code: 50013 };
const THREAD_ARCHIVED = { message: "Thread is archived", code: 50083 };
const invalidForm = (field: string, code: string, message: string) => ({ message: "Invalid Form Body", code: 50035, errors: { [field]: { _errors: [{ code, message }] } } });

export class FakeDiscord {
  readonly requests: RecordedRequest[] = [];
  private readonly channels = new Map<string, Payload>();
  /** Channel id → message id → message: the channel histories. */
  private readonly histories = new Map<string, Map<string, Payload>>();
  private readonly permissions = new Map<string, ChannelPermissions>();
  private readonly files = new Map<string, { body: Buffer; contentType: string | undefined }>();
  private readonly buckets = new ChannelBuckets();
  private readonly faults: SendFault[] = [];
  private readonly gateway: FakeGateway;
  private lastSnowflake = 0n;

  private constructor(private readonly http: Server, wss: WebSocketServer, readonly port: number, private readonly options: Required<FakeDiscordOptions>) {
    for (const guild of options.guilds) {
      for (const channel of [...(guild.channels as Payload[]), ...(guild.threads as Payload[])]) this.channels.set(String(channel.id), structuredClone(channel));
    }
    this.channels.set(IDS.dmChannel, { id: IDS.dmChannel, type: 1, last_message_id: null, recipients: [HUMAN_USER] });
    this.gateway = new FakeGateway(wss, {
      port: () => this.port,
      botUserId: IDS.bot,
      guilds: () => this.options.guilds.map((guild) => this.guildCreate(guild)),
      readyPayload: (sessionId) => ({
        v: 10, user: BOT_USER, guilds: this.options.guilds.map((guild) => ({ id: guild.id, unavailable: true })), session_id: sessionId,
        resume_gateway_url: `ws://127.0.0.1:${this.port}`, shard: [0, 1], application: { id: IDS.application, flags: 0 },
        private_channels: [], relationships: [],
      }),
      visibleTo: (event, data, intents) => this.visibleTo(event, data, intents),
    }, options.heartbeatIntervalMs);
    this.gateway.identifyCloseCode = options.identifyCloseCode;
  }

  static async start(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
    const http = createServer();
    const wss = new WebSocketServer({ server: http });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const fake = new FakeDiscord(http, wss, (http.address() as AddressInfo).port, {
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 250,
      guilds: options.guilds ?? [DEFAULT_GUILD],
      identifyCloseCode: options.identifyCloseCode ?? 0,
    });
    http.on("request", (request, response) => void fake.handleRest(request, response));
    return fake;
  }

  /** For `rest.api` / DISCORD_API_ROOT. */
  get apiRoot(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  get identifies(): Payload[] {
    return this.gateway.identifies;
  }

  get resumes(): Payload[] {
    return this.gateway.resumes;
  }

  get heartbeats(): number {
    return this.gateway.heartbeats;
  }

  /** Bodies of the messages the bot created, in order. */
  get sentMessages(): Payload[] {
    return this.requests.filter((r) => r.method === "POST" && /^\/channels\/\d+\/messages$/.test(r.path) && r.status === 200).map((r) => r.body as Payload);
  }

  requestsTo(method: string, pattern: RegExp): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && pattern.test(r.path));
  }

  /** A stored message (what GET /channels/:id/messages/:id returns). */
  message(channelId: string, messageId: string): Payload | undefined {
    return this.histories.get(channelId)?.get(messageId);
  }

  /** Messages the bot created in a channel, as Discord stored them (with who they pinged). */
  botMessages(channelId: string): Payload[] {
    return [...(this.histories.get(channelId)?.values() ?? [])].filter((message) => (message.author as Payload).id === IDS.bot);
  }

  /** The next POST /channels/:id/messages fails with this answer (429s carry the real headers). */
  failNextSend(fault: SendFault): void {
    this.faults.push(fault);
  }

  setPermissions(channelId: string, permissions: Partial<ChannelPermissions>): void {
    this.permissions.set(channelId, { ...this.permissionsOf(channelId), ...permissions });
  }

  /** Sends a gateway dispatch (op 0) to every session (kept for RESUME while one has no socket). */
  dispatch(event: string, data: unknown): void {
    this.gateway.dispatch(event, data);
  }

  /** See FakeGateway.disconnect. */
  disconnectGateway(options: { resumable?: boolean; code?: number } = {}): void {
    this.gateway.disconnect(options);
  }

  /** While unreachable, a (re)connecting client waits for HELLO; messages posted meanwhile are stored. */
  setGatewayReachable(reachable: boolean): void {
    this.gateway.setReachable(reachable);
  }

  get connectedSessions(): number {
    return this.gateway.connectedSessions;
  }

  /**
   * A user posts a message: Discord stores it, then dispatches MESSAGE_CREATE. Fills in what
   * Discord always sends; parses the mentions out of the content; adds guild_id and the member
   * for guild channels and `channel_type: 1` for DMs (discord.js needs it for the DM channel).
   */
  dispatchMessage(partial: Payload & { channel_id: string }, options: UserMessageOptions = {}): Payload {
    const message = this.buildUserMessage(partial, options);
    this.store(message);
    this.dispatch("MESSAGE_CREATE", message);
    return message;
  }

  /** Stores a user message without telling any client: history from before the bot connected. */
  seedHistory(partial: Payload & { channel_id: string }, options: UserMessageOptions = {}): Payload {
    const message = this.buildUserMessage(partial, options);
    this.store(message);
    return message;
  }

  /** A thread created in a channel: stored, THREAD_CREATE sent (the Guilds intent). */
  createThread(parentId: string, name: string, id = this.snowflake()): Payload {
    const thread = { ...threadChannel(id, parentId, name), newly_created: true };
    this.channels.set(id, thread);
    this.dispatch("THREAD_CREATE", thread);
    return thread;
  }

  /** Archives (and optionally locks) a thread; THREAD_UPDATE tells the clients. */
  archiveThread(threadId: string, options: { locked?: boolean } = {}): void {
    const thread = this.channels.get(threadId);
    if (!thread?.thread_metadata) throw new Error(`fake: ${threadId} is not a thread`);
    thread.thread_metadata = { ...(thread.thread_metadata as Payload), archived: true, locked: options.locked ?? false, archive_timestamp: new Date().toISOString() };
    this.dispatch("THREAD_UPDATE", thread);
  }

  async close(): Promise<void> {
    this.gateway.closeAll();
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  /** Time-ordered ids, as Discord's: later messages always have larger ids. */
  private snowflake(): string {
    const next = BigInt(snowflakeAt(Date.now()));
    this.lastSnowflake = next > this.lastSnowflake ? next : this.lastSnowflake + 1n;
    return this.lastSnowflake.toString();
  }

  private permissionsOf(channelId: string): ChannelPermissions {
    return this.permissions.get(channelId) ?? { view: true, send: true };
  }

  private guildOf(channel: Payload | undefined): Payload | undefined {
    return channel?.guild_id === undefined ? undefined : this.options.guilds.find((guild) => guild.id === channel.guild_id);
  }

  private guildCreate(guild: Payload): Payload {
    const channels = [...this.channels.values()].filter((channel) => channel.guild_id === guild.id);
    return {
      ...guild,
      channels: channels.filter((channel) => channel.type !== 11 && channel.type !== 12),
      threads: channels.filter((channel) => (channel.type === 11 || channel.type === 12) && !(channel.thread_metadata as Payload).archived),
    };
  }

  private memberOf(guild: Payload, userId: string): Payload | undefined {
    const found = (guild.members as Payload[]).find((member) => (member.user as Payload).id === userId);
    if (!found) return undefined;
    const { user: _user, ...member } = found;
    return member;
  }

  private buildUserMessage(given: Payload & { channel_id: string }, options: UserMessageOptions): Payload {
    // `{ id: undefined }` means "let Discord choose", not "no id".
    const partial = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined)) as Payload & { channel_id: string };
    const channel = this.channels.get(partial.channel_id);
    if (!channel) throw new Error(`fake: no channel ${partial.channel_id}`);
    const guild = this.guildOf(channel);
    const content = typeof partial.content === "string" ? partial.content : "";
    // The client turns longer text into a message.txt attachment; the API refuses it.
    if (discordLength(content) > 2000) throw new Error(`fake: a user message holds at most 2,000 characters (got ${discordLength(content)}); send it as files: [message.txt]`);
    const id = typeof partial.id === "string" ? partial.id : this.snowflake();
    const author = (partial.author as Payload | undefined) ?? HUMAN_USER;
    const reference = this.referenceFor(partial, options);
    const referenced = reference?.type === 0 ? this.referencedMessage(partial, String(reference.message_id)) : undefined;
    const mentions = this.mentionsFor(content, guild, partial, options.pingReply === true ? (referenced?.author as Payload | undefined) : undefined);
    const attachments = (options.files ?? []).map((file) => this.upload(partial.channel_id, file));
    const message: Payload = {
      id, author, content: "", timestamp: new Date(snowflakeTime(id)).toISOString(), edited_timestamp: null,
      tts: false, attachments, embeds: [], pinned: false, type: reference?.type === 0 ? 19 : 0, flags: 0,
      ...(guild ? { guild_id: guild.id, member: (partial.member as Payload | undefined) ?? this.memberOf(guild, String(author.id)) } : {}),
      ...(channel.type === 1 ? { channel_type: 1 } : {}),
      ...partial,
      ...(attachments.length > 0 ? { attachments } : {}),
      ...mentions,
      ...(reference ? { message_reference: reference } : {}),
      ...(reference?.type === 0 ? { referenced_message: referenced ? oneLevel(referenced) : null } : {}),
      ...(options.forward ? this.snapshotOf(options.forward) : {}),
    };
    return message;
  }

  private referenceFor(partial: Payload, options: UserMessageOptions): Payload | undefined {
    const given = partial.message_reference as Payload | undefined;
    const channelId = partial.channel_id as string;
    const guildId = this.channels.get(channelId)?.guild_id;
    if (options.forward) {
      const source = this.channels.get(options.forward.channelId);
      return { type: 1, message_id: options.forward.messageId, channel_id: options.forward.channelId, ...(source?.guild_id ? { guild_id: source.guild_id } : {}) };
    }
    const messageId = options.replyTo ?? (given ? String(given.message_id) : undefined);
    if (messageId === undefined) return undefined;
    return { type: 0, message_id: messageId, channel_id: channelId, ...(guildId ? { guild_id: guildId } : {}) };
  }

  /**
   * The replied-to message from the channel's history. A payload that brings its own
   * `referenced_message` (a fixture) adds it to the history, as a message from before the fake
   * started; Discord sends null when the message was deleted.
   */
  private referencedMessage(partial: Payload & { channel_id: string }, messageId: string): Payload | undefined {
    const stored = this.message(partial.channel_id, messageId);
    if (stored) return stored;
    const given = partial.referenced_message as Payload | null | undefined;
    if (!given || given.id !== messageId) return undefined;
    const imported = { ...given, channel_id: partial.channel_id };
    this.store(imported);
    return imported;
  }

  /** Mentions as Discord parses them; a payload that claims different ones is a test bug. */
  private mentionsFor(content: string, guild: Payload | undefined, partial: Payload, pinged: Payload | undefined): Payload {
    const roleIds = new Set(((guild?.roles as Payload[] | undefined) ?? []).map((role) => String(role.id)));
    const parsed = parseMentions(content, roleIds);
    const userIds = [...new Set([...parsed.userIds, ...(pinged ? [String(pinged.id)] : [])])];
    const claimed = partial.mentions as Payload[] | undefined;
    if (claimed && !sameIds(claimed.map((user) => String(user.id)), userIds)) {
      throw new Error(`fake: payload claims mentions ${claimed.map((user) => user.id).join(",")}, content mentions ${userIds.join(",")}`);
    }
    const claimedRoles = partial.mention_roles as string[] | undefined;
    if (claimedRoles && !sameIds(claimedRoles, parsed.roleIds)) throw new Error(`fake: payload claims mention_roles ${claimedRoles.join(",")}, content mentions ${parsed.roleIds.join(",")}`);
    const mentions = userIds.map((id) => {
      const user = KNOWN_USERS.get(id) as Payload;
      const member = guild ? this.memberOf(guild, id) : undefined;
      return member ? { ...user, member } : user;
    });
    return { mentions, mention_roles: parsed.roleIds, mention_everyone: parsed.everyone };
  }

  private snapshotOf(source: { channelId: string; messageId: string }): Payload {
    const original = this.message(source.channelId, source.messageId);
    if (!original) throw new Error(`fake: cannot forward unknown message ${source.messageId}`);
    const { type, content, embeds, attachments, timestamp, edited_timestamp, flags, mentions, mention_roles } = original;
    return {
      content: "",
      // HAS_SNAPSHOT
      flags: 1 << 14,
      message_snapshots: [{ message: { type, content, embeds, attachments, timestamp, edited_timestamp, flags, mentions, mention_roles, sticker_items: [], components: [] } }],
    };
  }

  private upload(channelId: string, file: FileUpload): Payload {
    const id = this.snowflake();
    const body = Buffer.isBuffer(file.content) ? file.content : Buffer.from(file.content, "utf8");
    const contentType = file.contentType === null ? undefined : (file.contentType ?? contentTypeFor(file.name));
    const path = `/cdn/attachments/${channelId}/${id}/${encodeURIComponent(file.name)}`;
    this.files.set(path, { body, contentType });
    const url = `http://127.0.0.1:${this.port}${path}?ex=0&is=0&hm=fake`;
    return { id, filename: file.name, size: body.length, url, proxy_url: url, ...(contentType ? { content_type: contentType } : {}) };
  }

  private store(message: Payload): void {
    const channelId = String(message.channel_id);
    let history = this.histories.get(channelId);
    if (!history) {
      history = new Map();
      this.histories.set(channelId, history);
    }
    history.set(String(message.id), message);
    const channel = this.channels.get(channelId);
    if (channel && (channel.last_message_id === null || compareSnowflakes(String(message.id), String(channel.last_message_id)) > 0)) channel.last_message_id = message.id;
  }

  /** What a session sees of an event, given its intents (Discord's rules for the four we use). */
  private visibleTo(event: string, data: unknown, intents: number): unknown {
    if (event === "GUILD_CREATE" || event.startsWith("THREAD_")) return intents & GATEWAY_INTENTS.guilds ? data : undefined;
    if (event !== "MESSAGE_CREATE" || typeof data !== "object" || data === null) return data;
    const message = data as Payload;
    const inGuild = message.guild_id !== undefined;
    if (!(intents & (inGuild ? GATEWAY_INTENTS.guildMessages : GATEWAY_INTENTS.directMessages))) return undefined;
    // Raw dispatches may be malformed on purpose: pass them through as they are.
    const mentionsBot = Array.isArray(message.mentions) && (message.mentions as Payload[]).some((user) => user?.id === IDS.bot);
    if (!inGuild || intents & GATEWAY_INTENTS.messageContent || mentionsBot || (message.author as Payload | undefined)?.id === IDS.bot) return data;
    return { ...message, content: "", embeds: [], attachments: [], message_snapshots: [] };
  }

  private async handleRest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const method = request.method ?? "GET";
    const url = new URL(request.url ?? "/", "http://fake");
    const path = url.pathname.replace(/^\/api\/v10/, "");
    let body: unknown;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      body = text;
    }
    const record: RecordedRequest = { method, path, query: url.searchParams, headers: request.headers, body, status: 0 };
    this.requests.push(record);
    const reply: Reply = (status, payload, headers = {}) => {
      record.status = status;
      if (payload === undefined) {
        // 204 with no content-type: undici would try to parse an empty JSON body otherwise.
        response.writeHead(status, headers).end();
        return;
      }
      response.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(payload));
    };

    // The CDN needs no token (its URLs are signed); everything else does.
    if (method === "GET" && path.startsWith("/cdn/")) return this.serveFile(path, record, response);
    if (request.headers.authorization !== `Bot ${FAKE_TOKEN}`) return reply(401, { message: "401: Unauthorized", code: 0 });
    try {
      this.route(method, path, url.searchParams, body, reply);
    } catch (error) {
      reply(500, { message: `fake: ${error instanceof Error ? error.message : String(error)}`, code: 0 });
    }
  }

  private route(method: string, path: string, query: URLSearchParams, body: unknown, reply: Reply): void {
    if (method === "GET" && path === "/gateway/bot") {
      return reply(200, { url: `ws://127.0.0.1:${this.port}`, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } });
    }
    if (method === "GET" && path === "/users/@me") return reply(200, BOT_USER);
    if (method === "POST" && path === "/users/@me/channels") return reply(200, this.channels.get(IDS.dmChannel));
    const activeThreads = /^\/guilds\/(\d+)\/threads\/active$/.exec(path);
    if (method === "GET" && activeThreads) {
      const guild = this.options.guilds.find((candidate) => candidate.id === activeThreads[1]);
      if (!guild) return reply(404, { message: "Unknown Guild", code: 10004 });
      return reply(200, { threads: this.guildCreate(guild).threads, members: [] });
    }

    const route = /^\/channels\/(\d+)(?:\/(messages|typing)(?:\/(\d+))?)?$/.exec(path);
    if (!route) return reply(404, { message: "404: Not Found", code: 0 });
    const [, channelId = "", resource, messageId] = route;
    const channel = this.channels.get(channelId);
    if (!channel) return reply(404, { message: "Unknown Channel", code: 10003 });
    const permissions = this.permissionsOf(channelId);
    if (!permissions.view) return reply(403, MISSING_ACCESS);

    if (method === "GET" && resource === undefined) return reply(200, channel);
    if (method === "GET" && resource === "messages" && messageId !== undefined) {
      const message = this.message(channelId, messageId);
      return message ? reply(200, message) : reply(404, { message: "Unknown Message", code: 10008 });
    }
    if (method === "GET" && resource === "messages") return this.listMessages(channelId, query, reply);
    if (method === "POST" && resource === "typing") {
      if (!permissions.send) return reply(403, MISSING_PERMISSIONS);
      if (isLockedArchive(channel)) return reply(400, THREAD_ARCHIVED);
      return reply(204);
    }
    if (method === "POST" && resource === "messages" && messageId === undefined) return this.createMessage(channel, permissions, (body ?? {}) as Payload, reply);
    return reply(405, { message: "405: Method Not Allowed", code: 0 });
  }

  /** GET /channels/:id/messages: newest first, at most `limit` (1–100), around `after` or `before`. */
  private listMessages(channelId: string, query: URLSearchParams, reply: Reply): void {
    const limit = Number(query.get("limit") ?? 50);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) return reply(400, invalidForm("limit", "NUMBER_TYPE_MAX", "int value should be between 1 and 100"));
    const ascending = [...(this.histories.get(channelId)?.values() ?? [])].sort((a, b) => compareSnowflakes(String(a.id), String(b.id)));
    const after = query.get("after");
    const before = query.get("before");
    let page: Payload[];
    if (after !== null) page = ascending.filter((message) => compareSnowflakes(String(message.id), after) > 0).slice(0, limit);
    else if (before !== null) page = ascending.filter((message) => compareSnowflakes(String(message.id), before) < 0).slice(-limit);
    else page = ascending.slice(-limit);
    reply(200, page.reverse());
  }

  private createMessage(channel: Payload, permissions: ChannelPermissions, body: Payload, reply: Reply): void {
    const channelId = String(channel.id);
    const fault = this.faults.shift();
    if (fault) return this.replyFault(fault, reply);
    const bucket = this.buckets.take(channelId);
    if (!bucket.allowed) {
      const retryAfter = Math.max(0.001, (bucket.resetAt - Date.now()) / 1000);
      return reply(429, { message: "You are being rate limited.", retry_after: Number(retryAfter.toFixed(3)), global: false }, {
        ...ChannelBuckets.headers(bucket), "retry-after": String(Math.ceil(retryAfter)), "x-ratelimit-scope": "user",
      });
    }
    const limits = ChannelBuckets.headers(bucket);
    if (!permissions.send) return reply(403, MISSING_PERMISSIONS, limits);
    if (isLockedArchive(channel)) return reply(400, THREAD_ARCHIVED, limits);

    const content = typeof body.content === "string" ? body.content : "";
    if (discordLength(content) > 2000) return reply(400, invalidForm("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."), limits);
    if (content.trim() === "") return reply(400, { message: "Cannot send an empty message", code: 50006 }, limits);
    const allowed = parseAllowedMentions(body.allowed_mentions);
    if (typeof allowed === "string") return reply(400, invalidForm("allowed_mentions", "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE", allowed), limits);
    // enforce_nonce: the message already created with this nonce comes back, no new one.
    if (body.enforce_nonce === true && body.nonce !== undefined) {
      const existing = this.botMessages(channelId).find((message) => message.nonce === body.nonce);
      if (existing) return reply(200, existing, limits);
    }
    const requested = body.message_reference as Payload | undefined;
    const referenced = requested ? this.message(channelId, String(requested.message_id)) : undefined;
    if (requested && !referenced && requested.fail_if_not_exists !== false) {
      return reply(400, invalidForm("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"), limits);
    }
    // Sending unarchives a thread that is archived but not locked.
    if ((channel.thread_metadata as Payload | undefined)?.archived === true) {
      channel.thread_metadata = { ...(channel.thread_metadata as Payload), archived: false };
      this.dispatch("THREAD_UPDATE", channel);
    }
    const guild = this.guildOf(channel);
    const parsed = parseMentions(content, new Set(((guild?.roles as Payload[] | undefined) ?? []).map((role) => String(role.id))));
    const pinged = [
      ...parsed.userIds.filter((id) => allowed.parse.has("users") || allowed.users.has(id)),
      ...(referenced && allowed.repliedUser ? [String((referenced.author as Payload).id)] : []),
    ];
    const message: Payload = {
      id: this.snowflake(), channel_id: channelId, author: BOT_USER, content, timestamp: new Date().toISOString(),
      edited_timestamp: null, tts: false, mention_everyone: parsed.everyone && allowed.parse.has("everyone"),
      mentions: [...new Set(pinged)].map((id) => KNOWN_USERS.get(id)), mention_roles: parsed.roleIds.filter((id) => allowed.parse.has("roles")),
      attachments: [], embeds: [], pinned: false, type: referenced ? 19 : 0, flags: 0, nonce: body.nonce,
      ...(guild ? { guild_id: guild.id } : {}),
      ...(referenced ? { message_reference: { type: 0, message_id: referenced.id, channel_id: channelId, guild_id: channel.guild_id }, referenced_message: oneLevel(referenced) } : {}),
    };
    this.store(message);
    reply(200, message, limits);
  }

  private replyFault(fault: SendFault, reply: Reply): void {
    if (fault.status !== 429) return reply(fault.status, { message: fault.message ?? "Fake failure", code: fault.code ?? 0 });
    const retryAfter = fault.retry_after ?? 1;
    // What Discord sends with a 429: Retry-After in whole seconds, the bucket state, the scope.
    reply(429, { message: "You are being rate limited.", retry_after: retryAfter, global: fault.global ?? false }, {
      "retry-after": String(Math.ceil(retryAfter)),
      "x-ratelimit-limit": "5",
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": String(Date.now() / 1000 + retryAfter),
      "x-ratelimit-reset-after": retryAfter.toFixed(3),
      "x-ratelimit-bucket": "fake-channel-messages",
      "x-ratelimit-scope": fault.global ? "global" : "user",
      ...(fault.global ? { "x-ratelimit-global": "true" } : {}),
    });
  }

  private serveFile(path: string, record: RecordedRequest, response: ServerResponse): void {
    const file = this.files.get(path);
    record.status = file ? 200 : 404;
    if (!file) {
      response.writeHead(404, { "content-type": "text/plain" }).end("Not Found");
      return;
    }
    response.writeHead(200, { "content-length": String(file.body.length), ...(file.contentType ? { "content-type": file.contentType } : {}) }).end(file.body);
  }
}

const isLockedArchive = (channel: Payload): boolean => {
  const metadata = channel.thread_metadata as Payload | undefined;
  return metadata?.archived === true && metadata.locked === true;
};

/** Discord nests a replied-to message one level deep: its own `referenced_message` is left out. */
const oneLevel = (message: Payload): Payload => {
  const { referenced_message: _nested, ...rest } = message;
  return rest;
};

const sameIds = (a: string[], b: string[]): boolean => a.length === b.length && a.every((id) => b.includes(id));

/** Discord's allowed_mentions rules: `parse` holds users/roles/everyone, exclusive with the id lists. */
function parseAllowedMentions(value: unknown): { parse: Set<string>; users: Set<string>; repliedUser: boolean } | string {
  // Without allowed_mentions Discord pings whatever the content mentions, and the replied-to author.
  if (value === undefined) return { parse: new Set(["users", "roles", "everyone"]), users: new Set(), repliedUser: true };
  const allowed = value as { parse?: unknown; users?: unknown; roles?: unknown; replied_user?: unknown };
  const parse = Array.isArray(allowed.parse) ? allowed.parse.map(String) : [];
  if (parse.some((item) => !["users", "roles", "everyone"].includes(item))) return `parse holds an unknown type: ${parse.join(",")}`;
  const users = Array.isArray(allowed.users) ? allowed.users.map(String) : [];
  if (parse.includes("users") && users.length > 0) return "parse:users and users are mutually exclusive";
  return { parse: new Set(parse), users: new Set(users), repliedUser: allowed.replied_user === true };
}
