import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { oneLevel, type ChannelPermissions, type DiscordStore } from "./fake-discord-store.js";
import { FakeInteractions } from "./fake-discord-interactions.js";
import { multipartBoundary, parseMultipart, type Multipart, type MultipartFile } from "./multipart.js";
import { IS_VOICE_MESSAGE, voiceMessageRefusal } from "./fake-discord-voice.js";

/** Largest file a bot may upload to a server without boosts (and to DMs): 10 MiB. */
export const DISCORD_UPLOAD_LIMIT = 10 * 1024 * 1024;
import { BOT_USER, ChannelBuckets, FAKE_TOKEN, IDS, KNOWN_USERS, compareSnowflakes, discordLength, parseMentions, type Payload } from "./fake-discord-world.js";

/**
 * How long Discord remembers a message's nonce for enforce_nonce: "the past few minutes" (the API
 * docs); 2 minutes here, the short end of "a few".
 */
export const NONCE_WINDOW_MS = 120_000;

/**
 * The fake Discord's REST side: the routes discord.js uses, under /api/v10, and the CDN that
 * serves attachments. Refuses what Discord refuses; records every call with its headers.
 */

export interface RecordedRequest {
  method: string;
  /** Path below /api/v10 (or /cdn for attachments), e.g. `/channels/1/messages`. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: unknown;
  status: number;
  /** When the request arrived (Date.now()). */
  at: number;
}

export interface SendFault {
  status: number;
  /** Seconds, as in Discord's 429 body. */
  retry_after?: number;
  global?: boolean;
  code?: number;
  message?: string;
}

export type { InteractionCallback } from "./fake-discord-interactions.js";

type Reply = (status: number, payload?: unknown, headers?: Record<string, string>) => void;

const MISSING_ACCESS = { message: "Missing Access", code: 50001 };
const MISSING_PERMISSIONS = { message: "Missing Permissions", code: 50013 };
const THREAD_ARCHIVED = { message: "Thread is archived", code: 50083 };
const SUPPRESS_EMBEDS = 1 << 2;
const SUPPRESS_NOTIFICATIONS = 1 << 12;
const invalidForm = (field: string, code: string, message: string) => ({ message: "Invalid Form Body", code: 50035, errors: { [field]: { _errors: [{ code, message }] } } });

/** Discord's limits as this fake enforces them. */
export interface DiscordRateLimits {
  /** Requests of the bot in any second, all routes but interaction callbacks. @defaultValue 50 */
  globalPerSecond: number;
  /** Requests into a limit still in its retry_after before the long penalty. @defaultValue 3 */
  abuseAfter: number;
  /** The long penalty, in seconds (Discord's and Cloudflare's bans for ignoring 429s are longer still). @defaultValue 120 */
  penaltySeconds: number;
}

export const DEFAULT_DISCORD_LIMITS: DiscordRateLimits = { globalPerSecond: 50, abuseAfter: 3, penaltySeconds: 120 };

/** A limit that answered 429: until when, and how many requests came in anyway. */
interface Block {
  until: number;
  violations: number;
  penalized: boolean;
}

export class FakeRest {
  readonly requests: RecordedRequest[] = [];
  /** undefined: no global limit (a test of something else that must send fast). */
  limits: DiscordRateLimits | undefined = DEFAULT_DISCORD_LIMITS;
  /** Long penalties given for requests sent through a retry_after (`scope`: "global" or a channel id), in order. */
  readonly penalties: Array<{ scope: string; at: number; seconds: number }> = [];
  private readonly globalSentAt: number[] = [];
  private readonly blocks = new Map<string, Block>();
  readonly faults: SendFault[] = [];
  /** How far the nonce check's clock is ahead of the real one (FakeDiscord.ageNonces). */
  nonceClockMs = 0;
  /** Requests performed at once but answered `ms` late (each hold springs once), as Discord under load. */
  readonly holds: Array<{ match: (request: RecordedRequest) => boolean; ms: number; status?: number }> = [];
  /** Requests whose answer was held, with when it was written. */
  readonly lateAnswers: Array<{ request: RecordedRequest; at: number }> = [];
  /** Application commands, interaction callbacks and their webhooks (fake-discord-interactions.ts). */
  readonly interactions: FakeInteractions;
  /**
   * Who each created message notified, in order: a DM's recipient, or in a guild the users it
   * pinged (mentions allowed by allowed_mentions, the replied-to author with replied_user);
   * nobody when it carried SUPPRESS_NOTIFICATIONS (@silent). Edits never notify.
   */
  readonly notifications: Array<{ channelId: string; messageId: string; userIds: string[] }> = [];
  /** Files the bot uploaded with messages Discord created, in order, as received. */
  /** Channels whose permissions refuse voice messages (50173). */
  readonly voiceMessagesRefused = new Set<string>();
  readonly uploads: Array<{ channelId: string; messageId: string; filename: string; bytes: Buffer; attachment: Payload }> = [];
  /** The files of the request being routed (multipart), for the message it creates. */
  private pendingFiles: MultipartFile[] = [];
  private readonly buckets = new ChannelBuckets();
  /** Edits have a bucket of their own per channel (5 per 5 s), with its own hash. */
  private readonly editBuckets = new ChannelBuckets();

  constructor(private readonly world: DiscordStore, private readonly port: () => number, private readonly dispatch: (event: string, data: unknown) => void) {
    this.interactions = new FakeInteractions(world);
  }

  async handleRest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const text = raw.toString("utf8");
    const method = request.method ?? "GET";
    const url = new URL(request.url ?? "/", "http://fake");
    const path = url.pathname.replace(/^\/api\/v10/, "");
    let body: unknown;
    // Uploads: multipart/form-data with the JSON in `payload_json` and the files as `files[n]`.
    const boundary = multipartBoundary(request.headers["content-type"]);
    let upload: Multipart | { error: string } | undefined;
    if (boundary !== undefined) {
      upload = parseMultipart(raw, boundary);
      try {
        body = "error" in upload ? undefined : JSON.parse(upload.fields.get("payload_json") ?? "{}");
      } catch {
        upload = { error: "payload_json is not JSON" };
      }
    } else {
      try {
        body = text === "" ? undefined : JSON.parse(text);
      } catch {
        body = text;
      }
    }
    const record: RecordedRequest = { method, path, query: url.searchParams, headers: request.headers, body, status: 0, at: Date.now() };
    this.requests.push(record);
    const hold = this.holds.find((candidate) => candidate.match(record));
    if (hold) this.holds.splice(this.holds.indexOf(hold), 1);
    const reply: Reply = (status, payload, headers = {}) => {
      record.status = status;
      if (hold) {
        const answered = hold.status === undefined ? { status, payload, headers } : { status: hold.status, payload: { message: "Fake failure after acting", code: 0 }, headers: {} };
        setTimeout(() => {
          this.lateAnswers.push({ request: record, at: Date.now() });
          if (!response.destroyed) response.writeHead(answered.status, { "content-type": "application/json", ...answered.headers }).end(answered.payload === undefined ? undefined : JSON.stringify(answered.payload));
        }, hold.ms);
        return;
      }
      if (payload === undefined) {
        // 204 with no content-type: undici would try to parse an empty JSON body otherwise.
        response.writeHead(status, headers).end();
        return;
      }
      response.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(payload));
    };

    // The CDN needs no token (its URLs are signed); everything else does.
    if (method === "GET" && path.startsWith("/cdn/")) return this.serveFile(path, record, response);
    // Interaction callbacks and their webhooks are authorised by the interaction's token, not the bot token.
    const uploaded = upload && !("error" in upload) ? upload.files.map((file) => file.filename) : [];
    if (this.interactions.routeTokenAuthorised(method, path, body, uploaded, reply)) return;
    if (request.headers.authorization !== `Bot ${FAKE_TOKEN}`) return reply(401, { message: "401: Unauthorized", code: 0 });
    const globalWait = this.globalLimit(Date.now());
    if (globalWait > 0) {
      return reply(429, { message: "You are being rate limited.", retry_after: Number(globalWait.toFixed(3)), global: true }, {
        "retry-after": String(Math.ceil(globalWait)), "x-ratelimit-global": "true", "x-ratelimit-scope": "global",
      });
    }
    if (this.interactions.routeCommands(method, path, body, reply)) return;
    if (upload && "error" in upload) return reply(400, { message: `Invalid Form Body: ${upload.error}`, code: 50035 });
    // Discord refuses an upload over the limit before reading it (no boosts: 10 MiB per file).
    if (upload && upload.files.some((file) => file.bytes.length > DISCORD_UPLOAD_LIMIT)) return reply(413, { message: "Request entity too large", code: 40005 });
    // A files[n] part without a filename is not a file: Discord wants its name.
    const unnamed = upload ? [...upload.fields.keys()].find((key) => /^files\[\d+\]$/.test(key)) : undefined;
    if (unnamed !== undefined) return reply(400, invalidForm(unnamed, "BASE_TYPE_REQUIRED", "This field is required (a file name)."));
    this.pendingFiles = upload?.files ?? [];
    try {
      this.route(method, path, url.searchParams, body, reply);
    } catch (error) {
      reply(500, { message: `fake: ${error instanceof Error ? error.message : String(error)}`, code: 0 });
    } finally {
      this.pendingFiles = [];
    }
  }

  /**
   * Seconds the bot must wait (the request is refused), or 0 (it is counted). A request sent while
   * told to wait counts against the bot; past `abuseAfter` of them the wait becomes the penalty.
   */
  private globalLimit(now: number): number {
    const limits = this.limits;
    if (!limits) return 0;
    const blocked = this.blocked("global", now);
    if (blocked > 0) return blocked;
    while (this.globalSentAt.length > 0 && now - (this.globalSentAt[0] ?? now) >= 1_000) this.globalSentAt.shift();
    if (this.globalSentAt.length >= limits.globalPerSecond) {
      const waitMs = (this.globalSentAt[0] ?? now) + 1_000 - now;
      this.blocks.set("global", { until: now + waitMs, violations: 0, penalized: false });
      return Math.max(0.001, waitMs / 1000);
    }
    this.globalSentAt.push(now);
    return 0;
  }

  /** Seconds left on `scope`'s 429 (a request sent anyway is counted toward the penalty), or 0. */
  private blocked(scope: string, now: number): number {
    const block = this.blocks.get(scope);
    if (!block || block.until <= now) return 0;
    block.violations++;
    const limits = this.limits ?? DEFAULT_DISCORD_LIMITS;
    if (!block.penalized && block.violations >= limits.abuseAfter) {
      block.penalized = true;
      block.until = now + limits.penaltySeconds * 1000;
      this.penalties.push({ scope, at: now, seconds: limits.penaltySeconds });
    }
    return (block.until - now) / 1000;
  }

  /** A bucket (`messages:<channel>`, `edits:<channel>`) answered 429 until `resetAt`: requests to it before then count toward a penalty. */
  private channelLimited(scope: string, resetAt: number): void {
    const block = this.blocks.get(scope);
    if (!block || block.until <= Date.now()) this.blocks.set(scope, { until: resetAt, violations: 0, penalized: false });
  }

  /** Discord gives the bot ("global") or a channel's bucket (`messages:<id>`, `edits:<id>`) a penalty of `seconds` now. */
  penalize(scope: string, seconds: number, now = Date.now()): void {
    this.blocks.set(scope, { until: now + seconds * 1000, violations: 0, penalized: true });
    this.penalties.push({ scope, at: now, seconds });
  }

  /** Answers 429 for a bucket under a long penalty (→ true). */
  private channelPenalty(scope: string, reply: Reply): boolean {
    const wait = this.blocked(scope, Date.now());
    const block = this.blocks.get(scope);
    // Only a long penalty is answered here; a bucket's own short 429 is the bucket's to answer.
    if (wait <= 0 || !block?.penalized) return false;
    reply(429, { message: "You are being rate limited.", retry_after: Number(wait.toFixed(3)), global: false }, { "retry-after": String(Math.ceil(wait)), "x-ratelimit-scope": "user" });
    return true;
  }

  private route(method: string, path: string, query: URLSearchParams, body: unknown, reply: Reply): void {
    if (method === "GET" && path === "/gateway/bot") {
      return reply(200, { url: `ws://127.0.0.1:${this.port()}`, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } });
    }
    if (method === "GET" && path === "/users/@me") return reply(200, BOT_USER);
    if (method === "POST" && path === "/users/@me/channels") return reply(200, this.world.channels.get(IDS.dmChannel));
    const activeThreads = /^\/guilds\/(\d+)\/threads\/active$/.exec(path);
    if (method === "GET" && activeThreads) {
      const guild = this.world.guilds.find((candidate) => candidate.id === activeThreads[1]);
      if (!guild) return reply(404, { message: "Unknown Guild", code: 10004 });
      return reply(200, { threads: this.world.guildCreate(guild).threads, members: [] });
    }

    const reaction = /^\/channels\/(\d+)\/messages\/(\d+)\/reactions\/([^/]+)\/@me$/.exec(path);
    if (method === "PUT" && reaction) return this.addReaction(reaction[1] ?? "", reaction[2] ?? "", decodeURIComponent(reaction[3] ?? ""), reply);
    const route = /^\/channels\/(\d+)(?:\/(messages|typing)(?:\/(\d+))?)?$/.exec(path);
    if (!route) return reply(404, { message: "404: Not Found", code: 0 });
    const [, channelId = "", resource, messageId] = route;
    const channel = this.world.channels.get(channelId);
    if (!channel) return reply(404, { message: "Unknown Channel", code: 10003 });
    const permissions = this.world.permissionsOf(channelId);
    if (!permissions.view) return reply(403, MISSING_ACCESS);

    if (method === "GET" && resource === undefined) return reply(200, channel);
    if (method === "GET" && resource === "messages" && messageId !== undefined) {
      const message = this.world.message(channelId, messageId);
      return message ? reply(200, message) : reply(404, { message: "Unknown Message", code: 10008 });
    }
    if (method === "GET" && resource === "messages") return this.listMessages(channelId, query, reply);
    if (method === "POST" && resource === "typing") {
      if (!permissions.send) return reply(403, MISSING_PERMISSIONS);
      if (isLockedArchive(channel)) return reply(400, THREAD_ARCHIVED);
      return reply(204);
    }
    if (method === "POST" && resource === "messages" && messageId === undefined) return this.createMessage(channel, permissions, (body ?? {}) as Payload, reply);
    if (method === "PATCH" && resource === "messages" && messageId !== undefined) return this.editMessage(channel, messageId, (body ?? {}) as Payload, reply);
    if (method === "DELETE" && resource === "messages" && messageId !== undefined) {
      const existing = this.world.message(channelId, messageId);
      if (!existing) return reply(404, { message: "Unknown Message", code: 10008 });
      if ((existing.author as Payload).id !== IDS.bot && !permissions.send) return reply(403, MISSING_PERMISSIONS);
      this.world.remove(channelId, messageId);
      return reply(204);
    }
    return reply(405, { message: "405: Method Not Allowed", code: 0 });
  }

  /** PUT …/reactions/:emoji/@me: the bot reacts (Add Reactions needed; an archived thread refuses). */
  private addReaction(channelId: string, messageId: string, emoji: string, reply: Reply): void {
    const channel = this.world.channels.get(channelId);
    if (!channel) return reply(404, { message: "Unknown Channel", code: 10003 });
    const permissions = this.world.permissionsOf(channelId);
    if (!permissions.view) return reply(403, MISSING_ACCESS);
    const message = this.world.message(channelId, messageId);
    if (!message) return reply(404, { message: "Unknown Message", code: 10008 });
    if (!permissions.react) return reply(403, MISSING_PERMISSIONS);
    if ((channel.thread_metadata as Payload | undefined)?.archived === true) return reply(400, THREAD_ARCHIVED);
    if (emoji === "" || /^[\w ]+$/.test(emoji)) return reply(400, { message: "Unknown Emoji", code: 10014 });
    const reactions = ((message.reactions as Payload[] | undefined) ?? []).filter((entry) => (entry.emoji as Payload).name !== emoji);
    this.world.store({ ...message, reactions: [...reactions, { emoji: { id: null, name: emoji }, count: 1, me: true }] });
    reply(204);
  }

  /** GET /channels/:id/messages: newest first, at most `limit` (1–100), around `after` or `before`. */
  private listMessages(channelId: string, query: URLSearchParams, reply: Reply): void {
    const limit = Number(query.get("limit") ?? 50);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) return reply(400, invalidForm("limit", "NUMBER_TYPE_MAX", "int value should be between 1 and 100"));
    const ascending = this.world.history(channelId);
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
    if (this.channelPenalty(`messages:${channelId}`, reply)) return;
    const bucket = this.buckets.take(channelId);
    if (!bucket.allowed) {
      this.channelLimited(`messages:${channelId}`, bucket.resetAt);
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
    const files = this.pendingFiles;
    this.pendingFiles = [];
    for (const file of files) {
      if (!/^files\[\d+\]$/.test(file.name)) return reply(400, invalidForm(file.name, "BASE_TYPE_INVALID", "Unknown form field"), limits);
      if (file.filename === "") return reply(400, invalidForm(file.name, "BASE_TYPE_REQUIRED", "This field is required (a file name)."), limits);
      if (file.bytes.length === 0) return reply(400, invalidForm(file.name, "FILE_EMPTY", "Cannot upload an empty file."), limits);
    }
    if (files.length > 10) return reply(400, invalidForm("files", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length."), limits);
    if (content.trim() === "" && files.length === 0) return reply(400, { message: "Cannot send an empty message", code: 50006 }, limits);
    const allowed = parseAllowedMentions(body.allowed_mentions);
    if (typeof allowed === "string") return reply(400, invalidForm("allowed_mentions", "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE", allowed), limits);
    const componentsError = checkComponents(body.components);
    if (componentsError) return reply(400, invalidForm("components", "BASE_TYPE_INVALID", componentsError), limits);
    // A new message may set only SUPPRESS_EMBEDS (4), SUPPRESS_NOTIFICATIONS (4096) and IS_VOICE_MESSAGE (8192).
    const flags = Number(body.flags ?? 0);
    if (!Number.isInteger(flags) || (flags & ~(SUPPRESS_EMBEDS | SUPPRESS_NOTIFICATIONS | IS_VOICE_MESSAGE)) !== 0) return reply(400, invalidForm("flags", "MESSAGE_FLAGS_INVALID", "Invalid flags"), limits);
    const voiceRefusal = (flags & IS_VOICE_MESSAGE) !== 0 ? voiceMessageRefusal(body, files, this.voiceMessagesRefused.has(channelId)) : undefined;
    if (voiceRefusal) return reply(400, voiceRefusal, limits);
    // enforce_nonce: the message already created with this nonce "in the past few minutes" comes
    // back, no new one (Discord's docs); an older one does not stop a new message.
    if (body.enforce_nonce === true && body.nonce !== undefined) {
      const now = Date.now() + this.nonceClockMs;
      const existing = this.world.botMessages(channelId).find((message) => message.nonce === body.nonce && now - Date.parse(String(message.timestamp)) < NONCE_WINDOW_MS);
      if (existing) return reply(200, existing, limits);
    }
    const requested = body.message_reference as Payload | undefined;
    const referenced = requested ? this.world.message(channelId, String(requested.message_id)) : undefined;
    if (requested && !referenced && requested.fail_if_not_exists !== false) {
      return reply(400, invalidForm("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"), limits);
    }
    // Sending unarchives a thread that is archived but not locked.
    if ((channel.thread_metadata as Payload | undefined)?.archived === true) {
      channel.thread_metadata = { ...(channel.thread_metadata as Payload), archived: false };
      this.dispatch("THREAD_UPDATE", channel);
    }
    const guild = this.world.guildOf(channel);
    const parsed = parseMentions(content, new Set(((guild?.roles as Payload[] | undefined) ?? []).map((role) => String(role.id))));
    const pinged = [
      ...parsed.userIds.filter((id) => allowed.parse.has("users") || allowed.users.has(id)),
      ...(referenced && allowed.repliedUser ? [String((referenced.author as Payload).id)] : []),
    ];
    const message: Payload = {
      id: this.world.snowflake(), channel_id: channelId, author: BOT_USER, content, timestamp: new Date().toISOString(),
      edited_timestamp: null, tts: false, mention_everyone: parsed.everyone && allowed.parse.has("everyone"),
      mentions: [...new Set(pinged)].map((id) => KNOWN_USERS.get(id)), mention_roles: parsed.roleIds.filter((id) => allowed.parse.has("roles")),
      attachments: files.map((file, index) => ({
        id: this.world.snowflake(), filename: file.filename, size: file.bytes.length, content_type: file.contentType,
        url: `http://127.0.0.1:${this.port()}/cdn/uploads/${channelId}/${index}/${file.filename}`, proxy_url: "",
        ...voiceMetadata(body, index),
      })), embeds: [], pinned: false, type: referenced ? 19 : 0, flags, nonce: body.nonce,
      ...(Array.isArray(body.components) ? { components: body.components } : {}),
      ...(guild ? { guild_id: guild.id } : {}),
      ...(referenced ? { message_reference: { type: 0, message_id: referenced.id, channel_id: channelId, guild_id: channel.guild_id }, referenced_message: oneLevel(referenced) } : {}),
    };
    this.world.store(message);
    const recipients = channel.type === 1 ? ((channel.recipients as Payload[] | undefined) ?? []).map((user) => String(user.id)) : [...new Set(pinged)];
    this.notifications.push({ channelId, messageId: String(message.id), userIds: (flags & SUPPRESS_NOTIFICATIONS) !== 0 ? [] : recipients });
    for (const [index, file] of files.entries()) this.uploads.push({ channelId, messageId: String(message.id), filename: file.filename, bytes: file.bytes, attachment: (message.attachments as Payload[])[index]! });
    reply(200, message, limits);
  }

  /** PATCH /channels/:id/messages/:id: only the bot's own messages; content and components replaced. */
  private editMessage(channel: Payload, messageId: string, body: Payload, reply: Reply): void {
    const existing = this.world.message(String(channel.id), messageId);
    if (!existing) return reply(404, { message: "Unknown Message", code: 10008 });
    if (this.channelPenalty(`edits:${String(channel.id)}`, reply)) return;
    const bucket = this.editBuckets.take(String(channel.id));
    const bucketHeaders = { ...ChannelBuckets.headers(bucket), "x-ratelimit-bucket": "fake-channel-message-edits" };
    if (!bucket.allowed) {
      this.channelLimited(`edits:${String(channel.id)}`, bucket.resetAt);
      const retryAfter = Math.max(0.001, (bucket.resetAt - Date.now()) / 1000);
      return reply(429, { message: "You are being rate limited.", retry_after: Number(retryAfter.toFixed(3)), global: false }, {
        ...bucketHeaders, "retry-after": String(Math.ceil(retryAfter)), "x-ratelimit-scope": "user",
      });
    }
    if ((existing.author as Payload).id !== IDS.bot) return reply(403, { message: "Cannot edit a message authored by another user", code: 50005 });
    // Nothing in an archived thread can be edited (only a new message unarchives it).
    if ((channel.thread_metadata as Payload | undefined)?.archived === true) return reply(400, THREAD_ARCHIVED);
    if (typeof body.content === "string" && discordLength(body.content) > 2000) return reply(400, invalidForm("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."));
    const allowed = parseAllowedMentions(body.allowed_mentions);
    if (typeof allowed === "string") return reply(400, invalidForm("allowed_mentions", "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE", allowed));
    const componentsError = checkComponents(body.components);
    if (componentsError) return reply(400, invalidForm("components", "BASE_TYPE_INVALID", componentsError));
    const edited: Payload = {
      ...existing,
      ...(typeof body.content === "string" ? { content: body.content } : {}),
      ...(body.components !== undefined ? { components: body.components } : {}),
      edited_timestamp: new Date().toISOString(),
    };
    this.world.store(edited);
    reply(200, edited, bucketHeaders);
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
    const file = this.world.file(path);
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

/** What Discord checks in message components: rows (type 1) of at most 5 buttons (type 2), labels ≤ 80, custom_id 1–100. */
function checkComponents(components: unknown): string | undefined {
  if (components === undefined) return undefined;
  if (!Array.isArray(components) || components.length > 5) return "components must be an array of at most 5 action rows";
  for (const row of components as Payload[]) {
    const buttons = row.components as Payload[] | undefined;
    if (row.type !== 1 || !Array.isArray(buttons) || buttons.length === 0 || buttons.length > 5) return "an action row holds 1 to 5 components";
    for (const button of buttons) {
      if (button.type !== 2) return "only buttons are supported here";
      if (typeof button.label !== "string" || button.label.length > 80) return "button label must be 80 or fewer in length";
      if (typeof button.custom_id !== "string" || button.custom_id.length < 1 || button.custom_id.length > 100) return "custom_id must be 1 to 100 characters";
    }
  }
  return undefined;
}

/** A voice message's attachment keeps the duration and waveform its request gave. */
function voiceMetadata(body: Payload, index: number): Payload {
  const metadata = (Array.isArray(body.attachments) ? body.attachments : [])[index] as Payload | undefined;
  return metadata && typeof metadata.duration_secs === "number" ? { duration_secs: metadata.duration_secs, waveform: metadata.waveform } : {};
}
