import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

/**
 * A small, honest fake of Discord: the REST routes discord.js uses (under /api/v10) on
 * node:http and the gateway (JSON encoding, no zlib) on `ws`, both on 127.0.0.1:0.
 * Point a client at it with `rest: { api: fake.apiRoot }`; login fetches /gateway/bot, which
 * hands out the ws URL. Every REST call is recorded, with its headers.
 */

export type Payload = Record<string, unknown>;

export const FAKE_TOKEN = "fake.discord.token-0123456789";

/** Snowflake-shaped ids shared by the fake's default world and the fixtures. */
export const IDS = {
  application: "100000000000000001",
  bot: "100000000000000001",
  guild: "200000000000000001",
  textChannel: "300000000000000001",
  alwaysOnChannel: "300000000000000002",
  thread: "300000000000000003",
  dmChannel: "300000000000000004",
  user: "400000000000000001",
  otherUser: "400000000000000002",
  otherBot: "400000000000000003",
} as const;

export const BOT_USER = { id: IDS.bot, username: "longhaul", global_name: null, discriminator: "0", avatar: null, bot: true };
export const HUMAN_USER = { id: IDS.user, username: "ada", global_name: "Ada L.", discriminator: "0", avatar: null };

const textChannel = (id: string, name: string): Payload => ({
  id, type: 0, guild_id: IDS.guild, name, position: 0, permission_overwrites: [], parent_id: null,
  topic: null, nsfw: false, last_message_id: null, rate_limit_per_user: 0,
});

export const DEFAULT_GUILD: Payload = {
  id: IDS.guild, name: "Fake Guild", icon: null, owner_id: IDS.user, afk_timeout: 300, verification_level: 0,
  default_message_notifications: 0, explicit_content_filter: 0, mfa_level: 0, nsfw_level: 0, premium_tier: 0,
  preferred_locale: "en-US", features: [], emojis: [], stickers: [], unavailable: false, large: false,
  member_count: 2, joined_at: "2026-01-01T00:00:00.000Z", voice_states: [], presences: [], stage_instances: [],
  guild_scheduled_events: [], system_channel_flags: 0,
  roles: [{ id: IDS.guild, name: "@everyone", permissions: "1071698660929", position: 0, color: 0, hoist: false, managed: false, mentionable: false, flags: 0 }],
  members: [{ user: BOT_USER, nick: null, roles: [], joined_at: "2026-01-01T00:00:00.000Z", deaf: false, mute: false, flags: 0 }],
  channels: [textChannel(IDS.textChannel, "general"), textChannel(IDS.alwaysOnChannel, "ask-the-bot")],
  threads: [{
    id: IDS.thread, type: 11, guild_id: IDS.guild, parent_id: IDS.textChannel, owner_id: IDS.user, name: "a thread",
    last_message_id: null, message_count: 0, member_count: 1, rate_limit_per_user: 0, flags: 0,
    thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: "2026-01-01T00:00:00.000Z", locked: false },
  }],
};

export interface RecordedRequest {
  method: string;
  /** Path below /api/v10, e.g. `/channels/1/messages`. */
  path: string;
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
  /** Answer IDENTIFY by closing the socket with this code (4004 bad token, 4014 disallowed intents). */
  identifyCloseCode?: number;
}

export class FakeDiscord {
  readonly requests: RecordedRequest[] = [];
  readonly identifies: Payload[] = [];
  heartbeats = 0;
  private readonly channels = new Map<string, Payload>();
  private readonly messages = new Map<string, Payload>();
  private readonly sockets = new Set<WebSocket>();
  private readonly faults: SendFault[] = [];
  /** Interactions dispatched and not yet acknowledged: id → token and when it was sent. */
  private readonly openInteractions = new Map<string, { token: string; at: number }>();
  /** Interaction callbacks received, in order. */
  readonly interactionCallbacks: Array<{ id: string; type: number; late: boolean }> = [];
  private sequence = 0;
  private nextId = 500_000_000_000_000_000n;

  private constructor(
    private readonly http: Server,
    private readonly gateway: WebSocketServer,
    readonly port: number,
    private readonly options: Required<FakeDiscordOptions>,
  ) {
    for (const guild of options.guilds) {
      for (const channel of [...(guild.channels as Payload[]), ...(guild.threads as Payload[])]) this.channels.set(String(channel.id), channel);
    }
    this.channels.set(IDS.dmChannel, { id: IDS.dmChannel, type: 1, last_message_id: null, recipients: [HUMAN_USER] });
  }

  static async start(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
    const http = createServer();
    const gateway = new WebSocketServer({ server: http });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const fake = new FakeDiscord(http, gateway, (http.address() as AddressInfo).port, {
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 250,
      guilds: options.guilds ?? [DEFAULT_GUILD],
      identifyCloseCode: options.identifyCloseCode ?? 0,
    });
    http.on("request", (request, response) => void fake.handleRest(request, response));
    gateway.on("connection", (socket) => fake.handleGateway(socket));
    return fake;
  }

  /** For `rest.api` / DISCORD_API_ROOT. */
  get apiRoot(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  /** Bodies of the messages the bot created, in order. */
  get sentMessages(): Payload[] {
    return this.requests.filter((r) => r.method === "POST" && /^\/channels\/\d+\/messages$/.test(r.path) && r.status === 200).map((r) => r.body as Payload);
  }

  /** Messages the bot created, as they are now (edits applied), in order. */
  botMessages(): Payload[] {
    return [...this.messages.values()].filter((message) => (message.author as Payload).id === IDS.bot);
  }

  requestsTo(method: string, pattern: RegExp): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && pattern.test(r.path));
  }

  /** The next POST /channels/:id/messages fails with this answer (429s carry the real headers). */
  failNextSend(fault: SendFault): void {
    this.faults.push(fault);
  }

  /** Sends a gateway dispatch (op 0) to every connected client. */
  dispatch(event: string, data: unknown): void {
    this.sequence += 1;
    const frame = JSON.stringify({ op: 0, t: event, s: this.sequence, d: data });
    for (const socket of this.sockets) socket.send(frame);
  }

  /**
   * MESSAGE_CREATE from a user. Fills in what Discord always sends; adds guild_id for guild
   * channels and `channel_type: 1` for DMs (discord.js needs it to build the DM channel).
   */
  dispatchMessage(partial: Payload & { channel_id: string }): Payload {
    const channel = this.channels.get(partial.channel_id);
    const inGuild = channel !== undefined && channel.guild_id !== undefined;
    const message: Payload = {
      id: this.snowflake(), author: HUMAN_USER, content: "", timestamp: new Date().toISOString(), edited_timestamp: null,
      tts: false, mention_everyone: false, mentions: [], mention_roles: [], attachments: [], embeds: [], pinned: false,
      type: partial.message_reference ? 19 : 0, flags: 0,
      ...(inGuild ? { guild_id: channel.guild_id, member: { nick: null, roles: [], joined_at: "2026-01-01T00:00:00.000Z", deaf: false, mute: false } } : {}),
      ...(channel?.type === 1 ? { channel_type: 1 } : {}),
      ...partial,
    };
    this.messages.set(String(message.id), message);
    this.dispatch("MESSAGE_CREATE", message);
    return message;
  }

  /**
   * A user pressing a button of a bot message, as Discord dispatches it (INTERACTION_CREATE,
   * type 3). It must be acknowledged within 3 s, once (POST /interactions/:id/:token/callback).
   */
  dispatchButtonPress(channelId: string, messageId: string, customId: string, user: Payload = HUMAN_USER): string {
    const message = this.messages.get(messageId);
    if (!message || (message.author as Payload).id !== IDS.bot) throw new Error(`fake discord: no bot message ${messageId}`);
    const channel = this.channels.get(channelId);
    if (!channel) throw new Error(`fake discord: no channel ${channelId}`);
    const buttons = ((message.components as Payload[] | undefined) ?? []).flatMap((row) => row.components as Payload[]);
    if (!buttons.some((button) => button.custom_id === customId)) throw new Error(`fake discord: message ${messageId} has no button ${customId}`);
    const id = this.snowflake();
    const token = `itoken-${id}`;
    this.openInteractions.set(id, { token, at: Date.now() });
    const inGuild = channel.guild_id !== undefined;
    this.dispatch("INTERACTION_CREATE", {
      id, application_id: IDS.application, type: 3, token, version: 1,
      data: { custom_id: customId, component_type: 2 },
      channel: { id: channel.id, type: channel.type, ...(inGuild ? { guild_id: channel.guild_id } : {}) }, channel_id: channel.id,
      ...(inGuild
        ? { guild_id: channel.guild_id, member: { user, nick: null, roles: [], joined_at: "2026-01-01T00:00:00.000Z", deaf: false, mute: false, flags: 0, permissions: "1071698660929" } }
        : { user }),
      message, app_permissions: "1071698660929", locale: "en-US", guild_locale: "en-US", entitlements: [],
      authorizing_integration_owners: { 0: IDS.guild }, context: inGuild ? 0 : 1, attachment_size_limit: 26214400,
    });
    return id;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.terminate();
    await new Promise<void>((resolve) => this.gateway.close(() => resolve()));
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  private snowflake(): string {
    this.nextId += 1n;
    return this.nextId.toString();
  }

  private handleGateway(socket: WebSocket): void {
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
    const send = (payload: Payload): void => socket.send(JSON.stringify(payload));
    send({ op: 10, d: { heartbeat_interval: this.options.heartbeatIntervalMs } });
    socket.on("message", (raw) => {
      const frame = JSON.parse(String(raw)) as { op: number; d: Payload | null };
      if (frame.op === 1) {
        this.heartbeats += 1;
        send({ op: 11 });
      } else if (frame.op === 2 && frame.d) {
        this.identifies.push(frame.d);
        if (this.options.identifyCloseCode !== 0) {
          socket.close(this.options.identifyCloseCode, "Disallowed intent(s).");
          return;
        }
        const guilds = this.options.guilds.map((guild) => ({ id: guild.id, unavailable: true }));
        this.sequence += 1;
        send({ op: 0, t: "READY", s: this.sequence, d: {
          v: 10, user: BOT_USER, guilds, session_id: "fake-session", resume_gateway_url: `ws://127.0.0.1:${this.port}`,
          shard: [0, 1], application: { id: IDS.application, flags: 0 }, private_channels: [], relationships: [],
        } });
        for (const guild of this.options.guilds) this.dispatch("GUILD_CREATE", guild);
      } else if (frame.op === 6) {
        this.dispatch("RESUMED", null);
      }
    });
  }

  private async handleRest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const body: unknown = text === "" ? undefined : JSON.parse(text);
    const method = request.method ?? "GET";
    const path = new URL(request.url ?? "/", "http://fake").pathname.replace(/^\/api\/v10/, "");
    const record: RecordedRequest = { method, path, headers: request.headers, body, status: 0 };
    this.requests.push(record);
    const reply = (status: number, payload?: unknown, headers: Record<string, string> = {}): void => {
      record.status = status;
      if (payload === undefined) {
        // 204 with no content-type: undici would try to parse an empty JSON body otherwise.
        response.writeHead(status, headers).end();
        return;
      }
      response.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(payload));
    };

    // Interaction callbacks are authorised by the interaction's token, not the bot token.
    const interactionRoute = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(path);
    if (method === "POST" && interactionRoute) {
      const open = this.openInteractions.get(interactionRoute[1] ?? "");
      if (!open || open.token !== interactionRoute[2]) return reply(400, { message: "Interaction has already been acknowledged.", code: 40060 });
      this.openInteractions.delete(interactionRoute[1] ?? "");
      // After 3 s Discord has already shown "This interaction failed" and refuses the token.
      const late = Date.now() - open.at > 3_000;
      this.interactionCallbacks.push({ id: interactionRoute[1] ?? "", type: Number((body as Payload | undefined)?.type), late });
      if (late) return reply(404, { message: "Unknown interaction", code: 10062 });
      return reply(204);
    }
    if (request.headers.authorization !== `Bot ${FAKE_TOKEN}`) return reply(401, { message: "401: Unauthorized", code: 0 });
    const channelRoute = /^\/channels\/(\d+)(\/messages|\/typing)?$/.exec(path);
    const channel = channelRoute ? this.channels.get(channelRoute[1] ?? "") : undefined;

    if (method === "GET" && path === "/gateway/bot") {
      return reply(200, { url: `ws://127.0.0.1:${this.port}`, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } });
    }
    if (method === "GET" && path === "/users/@me") return reply(200, BOT_USER);
    if (method === "POST" && path === "/users/@me/channels") {
      const channel = { id: IDS.dmChannel, type: 1, last_message_id: null, recipients: [HUMAN_USER] };
      return reply(200, channel);
    }
    if (channelRoute && !channel) return reply(404, { message: "Unknown Channel", code: 10003 });
    if (channelRoute && channel && method === "GET" && channelRoute[2] === undefined) return reply(200, channel);
    if (channelRoute && channel && method === "POST" && channelRoute[2] === "/typing") return reply(204);
    const messageRoute = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path);
    if (method === "PATCH" && messageRoute) {
      const existing = this.messages.get(messageRoute[2] ?? "");
      if (!existing || existing.channel_id !== messageRoute[1]) return reply(404, { message: "Unknown Message", code: 10008 });
      if ((existing.author as Payload).id !== IDS.bot) return reply(403, { message: "Cannot edit a message authored by another user", code: 50005 });
      const patch = (body ?? {}) as Payload;
      const componentsError = checkComponents(patch.components);
      if (componentsError) return reply(400, { message: "Invalid Form Body", code: 50035, errors: { components: { _errors: [{ code: "BASE_TYPE_INVALID", message: componentsError }] } } });
      const edited: Payload = { ...existing, ...(typeof patch.content === "string" ? { content: patch.content } : {}), ...(patch.components !== undefined ? { components: patch.components } : {}), edited_timestamp: new Date().toISOString() };
      this.messages.set(String(existing.id), edited);
      return reply(200, edited);
    }
    if (channelRoute && channel && method === "POST" && channelRoute[2] === "/messages") {
      const fault = this.faults.shift();
      if (fault) return this.replyFault(fault, reply);
      return this.createMessage(channel, (body ?? {}) as Payload, reply);
    }
    return reply(404, { message: "404: Not Found", code: 0 });
  }

  private replyFault(fault: SendFault, reply: (status: number, payload?: unknown, headers?: Record<string, string>) => void): void {
    if (fault.status !== 429) return reply(fault.status, { message: fault.message ?? "Fake failure", code: fault.code ?? 0 });
    const retryAfter = fault.retry_after ?? 1;
    // What Discord sends with a 429: Retry-After in whole seconds, the bucket state, the scope.
    reply(429, { message: "You are being rate limited.", retry_after: retryAfter, global: fault.global ?? false }, {
      "retry-after": String(Math.ceil(retryAfter)),
      "x-ratelimit-limit": "5",
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": String(Date.now() / 1000 + retryAfter),
      "x-ratelimit-reset-after": retryAfter.toFixed(3),
      "x-ratelimit-bucket": "fake-messages-bucket",
      "x-ratelimit-scope": fault.global ? "global" : "user",
      ...(fault.global ? { "x-ratelimit-global": "true" } : {}),
    });
  }

  private createMessage(channel: Payload, body: Payload, reply: (status: number, payload?: unknown, headers?: Record<string, string>) => void): void {
    const content = typeof body.content === "string" ? body.content : "";
    if (content.length > 2000) {
      return reply(400, { message: "Invalid Form Body", code: 50035, errors: { content: { _errors: [{ code: "BASE_TYPE_MAX_LENGTH", message: "Must be 2000 or fewer in length." }] } } });
    }
    if (content.trim() === "") return reply(400, { message: "Cannot send an empty message", code: 50006 });
    const componentsError = checkComponents(body.components);
    if (componentsError) return reply(400, { message: "Invalid Form Body", code: 50035, errors: { components: { _errors: [{ code: "BASE_TYPE_INVALID", message: componentsError }] } } });
    // enforce_nonce: the message already created with this nonce comes back, no new one.
    if (body.enforce_nonce === true && body.nonce !== undefined) {
      const existing = [...this.messages.values()].find((m) => m.nonce === body.nonce && m.channel_id === channel.id && (m.author as Payload).id === IDS.bot);
      if (existing) return reply(200, existing);
    }
    const reference = body.message_reference as Payload | undefined;
    const message: Payload = {
      id: this.snowflake(), channel_id: channel.id, author: BOT_USER, content, timestamp: new Date().toISOString(),
      edited_timestamp: null, tts: false, mention_everyone: false, mentions: [], mention_roles: [], attachments: [],
      embeds: [], pinned: false, type: reference ? 19 : 0, flags: 0, nonce: body.nonce,
      ...(Array.isArray(body.components) ? { components: body.components } : {}),
      ...(channel.guild_id === undefined ? {} : { guild_id: channel.guild_id }),
      ...(reference ? {
        message_reference: { type: 0, message_id: reference.message_id, channel_id: channel.id, guild_id: channel.guild_id },
        referenced_message: this.messages.get(String(reference.message_id)) ?? null,
      } : {}),
    };
    this.messages.set(String(message.id), message);
    reply(200, message, { "x-ratelimit-limit": "5", "x-ratelimit-remaining": "4", "x-ratelimit-reset-after": "5.000", "x-ratelimit-bucket": "fake-messages-bucket" });
  }
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
