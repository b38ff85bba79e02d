import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";
import { FakeGateway } from "./fake-discord-gateway.js";
import { FakeRest, type InteractionCallback, type RecordedRequest, type SendFault } from "./fake-discord-rest.js";
import type { InteractionResponse } from "./fake-discord-interactions.js";
import { slashOptions, type SlashInput } from "./fake-discord-options.js";
import { DiscordStore, type ChannelPermissions, type UserMessageOptions } from "./fake-discord-store.js";
import { BOT_USER, DEFAULT_GUILD, HUMAN_USER, IDS, threadChannel, type Payload } from "./fake-discord-world.js";

export { BOT_USER, DEFAULT_GUILD, FAKE_TOKEN, HUMAN_USER, IDS, OTHER_USER, snowflakeAt, snowflakeTime, textChannel, threadChannel, type Payload } from "./fake-discord-world.js";
export type { InteractionCallback, RecordedRequest, SendFault } from "./fake-discord-rest.js";
export type { InteractionResponse } from "./fake-discord-interactions.js";
export type { ChannelPermissions, FileUpload, UserMessageOptions } from "./fake-discord-store.js";

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
 *   5 messages per 5 s per channel (429 with retry_after and the X-RateLimit-* headers), 50
 *   requests in any second per bot (429 `global: true`), and a 120 s penalty for a bot that
 *   keeps sending through a 429's retry_after (`penalties`; `limits`, undefined: no global limit),
 *   `enforce_nonce`, replies to unknown messages, and `allowed_mentions` (who got pinged).
 * - Buttons (message components) are checked as Discord checks them; a press is an
 *   INTERACTION_CREATE that must be acknowledged once, within 3 s; edits (PATCH) replace a bot
 *   message's content and components, checked like sends (2,000 code points), with a bucket of
 *   their own per channel (5 per 5 s, 429 with the X-RateLimit-* headers); a deleted message
 *   (DELETE, `deleteByUser`) answers 10008 Unknown Message.
 * - `holdAnswer`: a request performed at once and answered late, past the client's deadline
 *   (Discord under load), as a test asks.
 * - The gateway replays missed events on RESUME, refuses a session it forgot with
 *   INVALID_SESSION, sends THREAD_CREATE, and hides content from a client without the
 *   Message Content intent.
 */

export interface FakeDiscordOptions {
  /** HELLO's heartbeat_interval; real Discord says ~41250. @defaultValue 250 */
  heartbeatIntervalMs?: number;
  guilds?: Payload[];
  /** Answer IDENTIFY by closing the socket with this code (4004 bad token, 4011 sharding required, 4014 disallowed intents). */
  identifyCloseCode?: number;
}

export class FakeDiscord {
  private readonly world: DiscordStore;
  private readonly rest: FakeRest;
  private readonly gateway: FakeGateway;

  private constructor(private readonly http: Server, wss: WebSocketServer, readonly port: number, options: Required<FakeDiscordOptions>) {
    this.world = new DiscordStore(options.guilds, () => this.port);
    this.gateway = new FakeGateway(wss, {
      port: () => this.port,
      botUserId: IDS.bot,
      guilds: () => this.world.guilds.map((guild) => this.world.guildCreate(guild)),
      readyPayload: (sessionId) => ({
        v: 10, user: BOT_USER, guilds: this.world.guilds.map((guild) => ({ id: guild.id, unavailable: true })), session_id: sessionId,
        resume_gateway_url: `ws://127.0.0.1:${this.port}`, shard: [0, 1], application: { id: IDS.application, flags: 0 },
        private_channels: [], relationships: [],
      }),
      visibleTo: (event, data, intents) => this.world.visibleTo(event, data, intents),
    }, options.heartbeatIntervalMs);
    this.gateway.identifyCloseCode = options.identifyCloseCode;
    this.rest = new FakeRest(this.world, () => this.port, (event, data) => this.dispatch(event, data));
  }

  static async start(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
    // Many channels at once over kept-alive sockets: an idle socket is never closed under a
    // client about to reuse it, and the accept queue is deep.
    const http = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0, headersTimeout: 70_000 });
    const wss = new WebSocketServer({ server: http });
    await new Promise<void>((resolve) => http.listen({ port: 0, host: "127.0.0.1", backlog: 4096 }, resolve));
    const fake = new FakeDiscord(http, wss, (http.address() as AddressInfo).port, {
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 250,
      guilds: options.guilds ?? [DEFAULT_GUILD],
      identifyCloseCode: options.identifyCloseCode ?? 0,
    });
    http.on("request", (request, response) => void fake.rest.handleRest(request, response));
    return fake;
  }

  /** For `rest.api` / DISCORD_API_ROOT. */
  get apiRoot(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  /** Every REST and CDN call, with its headers, body and the status it got. */
  get requests(): RecordedRequest[] {
    return this.rest.requests;
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

  get connectedSessions(): number {
    return this.gateway.connectedSessions;
  }

  /** Files the bot uploaded with the messages Discord created, in order, as received. */
  get uploads(): FakeRest["uploads"] {
    return this.rest.uploads;
  }

  /** Channels whose permissions refuse voice messages (Discord's 50173). */
  get voiceMessagesRefused(): Set<string> {
    return this.rest.voiceMessagesRefused;
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
    return this.world.message(channelId, messageId);
  }

  /** Messages the bot created in a channel, as Discord stored them now (edits applied, with who they pinged). */
  botMessages(channelId: string): Payload[] {
    return this.world.botMessages(channelId);
  }

  /** A user (a moderator) deletes a message of the bot. */
  deleteByUser(channelId: string, messageId: string): void {
    this.world.remove(channelId, messageId);
  }

  /** Who each message the bot created notified (nobody for @silent ones), in order. */
  get notifications(): FakeRest["notifications"] {
    return this.rest.notifications;
  }

  /** Interaction callbacks received, in order (`late`: after Discord's 3 s). */
  get interactionCallbacks(): InteractionCallback[] {
    return this.rest.interactions.callbacks;
  }

  /** Messages shown in answer to interactions (@original and follow-ups), with who sees them. */
  get interactionResponses(): InteractionResponse[] {
    return this.rest.interactions.responses;
  }

  /** The application's global slash commands, by name. */
  get applicationCommands(): Map<string, Payload> {
    return this.rest.interactions.commands;
  }

  /** Makes an interaction `ms` older: its token lapses 15 minutes after it was created. */
  ageInteraction(interactionId: string, ms: number): void {
    this.rest.interactions.age(interactionId, ms);
  }

  /** Discord forgets an interaction: later webhook calls with its token get 404 (10015). */
  forgetInteraction(interactionId: string): void {
    this.rest.interactions.forget(interactionId);
  }

  /**
   * A user running one of the application's slash commands, as Discord dispatches it
   * (INTERACTION_CREATE, type 2): only a registered command, only where its contexts allow
   * (0: a guild, 1: the bot's DM), only with options it has (`text`: its `text` option). Returns
   * the interaction id.
   */
  dispatchSlashCommand(channelId: string, name: string, input?: string | SlashInput, user: Payload = HUMAN_USER): string {
    const command = this.rest.interactions.commands.get(name);
    if (!command) throw new Error(`fake discord: no application command /${name}`);
    const channel = this.world.channels.get(channelId);
    if (!channel) throw new Error(`fake discord: no channel ${channelId}`);
    const inGuild = channel.guild_id !== undefined;
    const contexts = (command.contexts as number[] | null | undefined) ?? [0, 1, 2];
    if (!contexts.includes(inGuild ? 0 : 1)) throw new Error(`fake discord: /${name} is not offered in ${inGuild ? "guilds" : "DMs"}`);
    const options = slashOptions(command, typeof input === "string" ? { values: { text: input } } : input ?? {});
    const id = this.world.snowflake();
    const token = this.rest.interactions.openInteraction(id, { type: 2, channelId, userId: String(user.id) });
    this.dispatch("INTERACTION_CREATE", {
      id, application_id: IDS.application, type: 2, token, version: 1,
      data: { id: command.id, name, type: 1, ...(options.length > 0 ? { options } : {}) },
      ...this.interactionPlace(channel, user),
    });
    return id;
  }

  private interactionPlace(channel: Payload, user: Payload): Payload {
    const inGuild = channel.guild_id !== undefined;
    return {
      channel: { id: channel.id, type: channel.type, ...(inGuild ? { guild_id: channel.guild_id } : {}) }, channel_id: channel.id,
      ...(inGuild
        ? { guild_id: channel.guild_id, member: { user, nick: null, roles: [], joined_at: "2026-01-01T00:00:00.000Z", deaf: false, mute: false, flags: 0, permissions: "1071698660929" } }
        : { user }),
      app_permissions: "1071698660929", locale: "en-US", guild_locale: "en-US", entitlements: [],
      authorizing_integration_owners: { 0: IDS.guild }, context: inGuild ? 0 : 1, attachment_size_limit: 26214400,
    };
  }

  /** The limits enforced (undefined: no global limit, for a test of something else that must send fast). */
  get limits(): FakeRest["limits"] {
    return this.rest.limits;
  }

  set limits(limits: FakeRest["limits"]) {
    this.rest.limits = limits;
  }

  /** Long penalties given for requests sent through a retry_after, in order. */
  get penalties(): FakeRest["penalties"] {
    return this.rest.penalties;
  }

  /** Discord gives the bot ("global") or a channel's bucket (`messages:<id>`, `edits:<id>`) a penalty of `seconds` now. */
  penalize(scope: string, seconds: number): void {
    this.rest.penalize(scope, seconds);
  }

  /** Requests answered 429, in order. */
  rateLimited(): RecordedRequest[] {
    return this.requests.filter((request) => request.status === 429);
  }

  /** Moves enforce_nonce's clock `ms` ahead: nonces older than the window (NONCE_WINDOW_MS) no longer stop a new message. */
  ageNonces(ms: number): void {
    this.rest.nonceClockMs += ms;
  }

  /**
   * The next request `match` accepts is performed at once and answered `ms` later (past a client's
   * deadline); with `status`, answered that instead (a 5xx after acting, as behind a failing proxy).
   */
  holdAnswer(match: (request: RecordedRequest) => boolean, ms: number, status?: number): void {
    this.rest.holds.push({ match, ms, ...(status === undefined ? {} : { status }) });
  }

  /** Requests whose answer was held (holdAnswer), with when it was written. */
  get lateAnswers(): FakeRest["lateAnswers"] {
    return this.rest.lateAnswers;
  }

  /** The next POST /channels/:id/messages fails with this answer (429s carry the real headers). */
  failNextSend(fault: SendFault): void {
    this.rest.faults.push(fault);
  }

  /**
   * Changes the bot's permissions in a channel with a member overwrite, and tells the gateway
   * (CHANNEL_UPDATE), as Discord does when someone edits the channel's overwrites;
   * `{ announce: false }` leaves the client's cache stale (an update it has not received yet).
   */
  setPermissions(channelId: string, permissions: Partial<ChannelPermissions>, options: { announce?: boolean } = {}): void {
    const changed = this.world.setPermissions(channelId, permissions);
    if (changed && options.announce !== false) this.dispatch("CHANNEL_UPDATE", changed);
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

  /**
   * A user posts a message: Discord stores it, then dispatches MESSAGE_CREATE. Fills in what
   * Discord always sends; parses the mentions out of the content; adds guild_id and the member
   * for guild channels and `channel_type: 1` for DMs (discord.js needs it for the DM channel).
   */
  dispatchMessage(partial: Payload & { channel_id: string }, options: UserMessageOptions = {}): Payload {
    const message = this.seedHistory(partial, options);
    this.dispatch("MESSAGE_CREATE", message);
    return message;
  }

  /**
   * Discord adds a link's preview to a posted message when it did not have it at hand (a GIF's
   * gifv embed among them): the stored message gets the embeds, and MESSAGE_UPDATE carries only
   * the id, the channel (and guild) and the embeds, as Discord sends it.
   */
  addEmbeds(channelId: string, messageId: string, embeds: Payload[]): void {
    const message = this.world.message(channelId, messageId);
    if (!message) throw new Error(`fake: no message ${messageId} in ${channelId}`);
    message.embeds = embeds;
    this.dispatch("MESSAGE_UPDATE", { id: messageId, channel_id: channelId, ...(message.guild_id === undefined ? {} : { guild_id: message.guild_id }), embeds });
  }

  /**
   * Serves a picture as Discord's media proxy serves an embed's (images-ext-1.discordapp.net):
   * at `<root>/<name>`; returns the root, for `gifvEmbed(page, root)`.
   */
  serveProxied(name: string, body: Buffer, contentType = "image/png"): string {
    return this.world.proxied(name, body, contentType);
  }

  /** Stores a user message without telling any client: history from before the bot connected. */
  seedHistory(partial: Payload & { channel_id: string }, options: UserMessageOptions = {}): Payload {
    const message = this.world.buildUserMessage(partial, options);
    this.world.store(message);
    return message;
  }

  /**
   * A user pressing a button of a bot message, as Discord dispatches it (INTERACTION_CREATE,
   * type 3). It must be acknowledged within 3 s, once (POST /interactions/:id/:token/callback).
   * Returns the interaction id. `clientShows`: the message as a stale client still shows it (its
   * buttons since removed by an edit the client has not seen yet).
   */
  dispatchButtonPress(channelId: string, messageId: string, customId: string, user: Payload = HUMAN_USER, clientShows?: Payload): string {
    const message = clientShows ?? this.world.message(channelId, messageId);
    if (!message || (message.author as Payload).id !== IDS.bot) throw new Error(`fake discord: no bot message ${messageId} in ${channelId}`);
    const channel = this.world.channels.get(channelId);
    if (!channel) throw new Error(`fake discord: no channel ${channelId}`);
    const buttons = ((message.components as Payload[] | undefined) ?? []).flatMap((row) => row.components as Payload[]);
    if (!buttons.some((button) => button.custom_id === customId)) throw new Error(`fake discord: message ${messageId} has no button ${customId}`);
    const id = this.world.snowflake();
    const token = this.rest.interactions.openInteraction(id, { type: 3, channelId, userId: String(user.id) });
    this.dispatch("INTERACTION_CREATE", {
      id, application_id: IDS.application, type: 3, token, version: 1,
      data: { custom_id: customId, component_type: 2 },
      message, ...this.interactionPlace(channel, user),
    });
    return id;
  }

  /** A thread created in a channel: stored, THREAD_CREATE sent (the Guilds intent). */
  createThread(parentId: string, name: string, id = this.world.snowflake()): Payload {
    const thread = { ...threadChannel(id, parentId, name), newly_created: true };
    this.world.channels.set(id, thread);
    this.dispatch("THREAD_CREATE", thread);
    return thread;
  }

  /** Archives (and optionally locks) a thread; THREAD_UPDATE tells the clients. */
  archiveThread(threadId: string, options: { locked?: boolean } = {}): void {
    const thread = this.world.channels.get(threadId);
    if (!thread?.thread_metadata) throw new Error(`fake: ${threadId} is not a thread`);
    thread.thread_metadata = { ...(thread.thread_metadata as Payload), archived: true, locked: options.locked ?? false, archive_timestamp: new Date().toISOString() };
    this.dispatch("THREAD_UPDATE", thread);
  }

  async close(): Promise<void> {
    this.gateway.closeAll();
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
