/**
 * The fake Discord's interactions, as strict as Discord's:
 * - application commands (GET/POST/PATCH/DELETE /applications/:id/commands): names,
 *   descriptions and options (fake-discord-options.ts) checked, at most 100 global commands
 *   (30032), at most 200 creations a day (30034), a POST with an existing name replaces it (as Discord upserts);
 * - an interaction is acknowledged once (40060 otherwise), within 3 s (10062 after);
 * - its token then works for webhook calls (edit/delete @original, follow-ups) for 15 minutes
 *   from the interaction (50027 Invalid Webhook Token after), and only once acknowledged
 *   (10015 Unknown Webhook before); @original exists only after a (deferred) reply;
 * - what each response showed and to whom: `responses` (ephemeral ones only to the invoker,
 *   public ones also stored in the channel's history).
 */
import { BOT_USER, IDS, discordLength, type Payload } from "./fake-discord-world.js";
import type { DiscordStore } from "./fake-discord-store.js";
import { NAME, invalidForm, invalidOptions } from "./fake-discord-options.js";

type Reply = (status: number, payload?: unknown, headers?: Record<string, string>) => void;

/** An answer to an interaction (POST /interactions/:id/:token/callback), as received. */
export interface InteractionCallback {
  id: string;
  /** 4: message; 5: deferred message ("thinking…"); 6: deferred update of the button's message. */
  type: number;
  /** data.flags (64: ephemeral). */
  flags: number;
  /** Arrived after Discord's 3 s: the user already saw "This interaction failed". */
  late: boolean;
}

/** A message shown in answer to an interaction: @original or a follow-up. */
export interface InteractionResponse {
  interactionId: string;
  messageId: string;
  channelId: string;
  /** Who invoked the interaction: the only one who sees an ephemeral response. */
  userId: string;
  ephemeral: boolean;
  /** "" while "thinking…" (deferred, not yet edited). */
  content: string;
  original: boolean;
  deleted: boolean;
  files: string[];
}

interface OpenInteraction {
  token: string;
  /** When Discord created it (Unix ms): the 3 s and the 15 min count from here. */
  at: number;
  type: number;
  channelId: string;
  userId: string;
  acknowledged?: number;
  original?: InteractionResponse;
}

const EPHEMERAL = 1 << 6;
const SUPPRESS_EMBEDS = 1 << 2;
const SUPPRESS_NOTIFICATIONS = 1 << 12;
const TOKEN_TTL_MS = 15 * 60_000;

export class FakeInteractions {
  readonly callbacks: InteractionCallback[] = [];
  readonly responses: InteractionResponse[] = [];
  /** The application's global commands, by name. */
  readonly commands = new Map<string, Payload>();
  /** Commands created today (Discord allows 200 a day). */
  creationsToday = 0;
  private readonly open = new Map<string, OpenInteraction>();

  constructor(private readonly world: DiscordStore) {}

  /** Registers a dispatched interaction; → its token. */
  openInteraction(id: string, details: { type: number; channelId: string; userId: string }): string {
    const token = `itoken-${id}`;
    this.open.set(id, { token, at: Date.now(), ...details });
    return token;
  }

  /** Makes an interaction `ms` older (its 3 s and 15 min then end sooner). */
  age(id: string, ms: number): void {
    const open = this.open.get(id);
    if (!open) throw new Error(`fake discord: no interaction ${id}`);
    open.at -= ms;
  }

  /** Discord no longer knows the interaction: its token then gets 404 Unknown Webhook (10015). */
  forget(id: string): void {
    if (!this.open.delete(id)) throw new Error(`fake discord: no interaction ${id}`);
  }

  /** Routes it handles without the bot token: callbacks and webhooks (authorised by the interaction token). */
  routeTokenAuthorised(method: string, path: string, body: unknown, files: string[], reply: Reply): boolean {
    const callback = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(path);
    if (method === "POST" && callback) {
      this.callback(callback[1] ?? "", callback[2] ?? "", (body ?? {}) as Payload, reply);
      return true;
    }
    const webhook = /^\/webhooks\/(\d+)\/([^/]+)(?:\/messages\/(@original|\d+))?$/.exec(decodeURIComponent(path));
    if (!webhook) return false;
    this.webhook(method, webhook[1] ?? "", webhook[2] ?? "", webhook[3], (body ?? {}) as Payload, files, reply);
    return true;
  }

  /** Application command routes (bot token checked by the caller). → false: not one of them. */
  routeCommands(method: string, path: string, body: unknown, reply: Reply): boolean {
    const route = /^\/applications\/(\d+)\/commands(?:\/(\d+))?$/.exec(path);
    if (!route) return false;
    if (route[1] !== IDS.application) {
      reply(403, { message: "Missing Access", code: 50001 });
      return true;
    }
    const commandId = route[2];
    if (method === "GET" && commandId === undefined) {
      reply(200, [...this.commands.values()]);
      return true;
    }
    const existing = commandId === undefined ? undefined : [...this.commands.values()].find((command) => command.id === commandId);
    if (commandId !== undefined && !existing) {
      reply(404, { message: "Unknown application command", code: 10063 });
      return true;
    }
    if (method === "DELETE" && existing) {
      this.commands.delete(String(existing.name));
      reply(204);
      return true;
    }
    if (method === "PATCH" && existing) {
      const merged = { ...existing, ...(body as Payload) };
      const invalid = invalidCommand(merged);
      if (invalid) reply(400, invalid);
      else {
        this.commands.delete(String(existing.name));
        this.commands.set(String(merged.name), { ...merged, version: this.world.snowflake() });
        reply(200, this.commands.get(String(merged.name)));
      }
      return true;
    }
    if (method === "POST" && commandId === undefined) {
      const command = (body ?? {}) as Payload;
      const invalid = invalidCommand(command);
      if (invalid) return (reply(400, invalid), true);
      const replaced = this.commands.get(String(command.name));
      if (!replaced && this.commands.size >= 100) return (reply(400, { message: "Maximum number of application commands reached (100)", code: 30032 }), true);
      if (this.creationsToday >= 200) return (reply(429, { message: "Max number of daily application command creates has been reached (200)", code: 30034, retry_after: 86_400, global: false }, { "retry-after": "86400" }), true);
      this.creationsToday += 1;
      const stored = { options: [], default_member_permissions: null, contexts: null, integration_types: [0], nsfw: false, ...command, id: replaced?.id ?? this.world.snowflake(), application_id: IDS.application, version: this.world.snowflake() };
      this.commands.set(String(command.name), stored);
      reply(replaced ? 200 : 201, stored);
      return true;
    }
    reply(405, { message: "405: Method Not Allowed", code: 0 });
    return true;
  }

  private callback(id: string, token: string, body: Payload, reply: Reply): void {
    const open = this.open.get(id);
    if (!open || open.token !== token) return reply(404, { message: "Unknown interaction", code: 10062 });
    if (open.acknowledged !== undefined) return reply(400, { message: "Interaction has already been acknowledged.", code: 40060 });
    const type = Number(body.type);
    const flags = Number((body.data as Payload | undefined)?.flags ?? 0);
    const late = Date.now() - open.at > 3_000;
    this.callbacks.push({ id, type, flags, late });
    if (late) return reply(404, { message: "Unknown interaction", code: 10062 });
    // A slash command (2) is answered with a message (4) or a deferred one (5); a button (3) also by an update (6, 7).
    const allowed = open.type === 2 ? [4, 5] : [4, 5, 6, 7];
    if (!allowed.includes(type)) return reply(400, { message: "Interaction callback type invalid for this interaction", code: 50035 });
    open.acknowledged = type;
    if (type === 4 || type === 5) {
      const content = type === 4 ? String((body.data as Payload | undefined)?.content ?? "") : "";
      open.original = this.respond(id, open, content, (flags & EPHEMERAL) !== 0, true, []);
    }
    reply(204);
  }

  private webhook(method: string, applicationId: string, token: string, target: string | undefined, body: Payload, files: string[], reply: Reply): void {
    const entry = [...this.open.entries()].find(([, open]) => open.token === token);
    if (applicationId !== IDS.application || !entry) return reply(404, { message: "Unknown Webhook", code: 10015 });
    const [id, open] = entry;
    if (Date.now() - open.at > TOKEN_TTL_MS) return reply(401, { message: "Invalid Webhook Token", code: 50027 });
    if (open.acknowledged === undefined) return reply(404, { message: "Unknown Webhook", code: 10015 });
    if (typeof body.content === "string" && discordLength(body.content) > 2000) return reply(400, invalidForm("content", "Must be 2000 or fewer in length."));
    if (target === "@original") {
      const original = open.original;
      if (!original || original.deleted) return reply(404, { message: "Unknown Message", code: 10008 });
      if (method === "DELETE") {
        original.deleted = true;
        if (!original.ephemeral) this.world.remove(original.channelId, original.messageId);
        return reply(204);
      }
      if (method !== "PATCH") return reply(405, { message: "405: Method Not Allowed", code: 0 });
      if (typeof body.content === "string") original.content = body.content;
      if (!original.ephemeral) this.storePublic(original);
      return reply(200, this.asMessage(original));
    }
    if (target !== undefined) return reply(404, { message: "Unknown Message", code: 10008 });
    if (method !== "POST") return reply(405, { message: "405: Method Not Allowed", code: 0 });
    const flags = Number(body.flags ?? 0);
    if ((flags & ~(EPHEMERAL | SUPPRESS_EMBEDS | SUPPRESS_NOTIFICATIONS)) !== 0) return reply(400, invalidForm("flags", "Invalid flags"));
    const content = typeof body.content === "string" ? body.content : "";
    if (content.trim() === "" && files.length === 0) return reply(400, { message: "Cannot send an empty message", code: 50006 });
    const response = this.respond(id, open, content, (flags & EPHEMERAL) !== 0, false, files);
    reply(200, this.asMessage(response));
  }

  private respond(interactionId: string, open: OpenInteraction, content: string, ephemeral: boolean, original: boolean, files: string[]): InteractionResponse {
    const response: InteractionResponse = {
      interactionId, messageId: this.world.snowflake(), channelId: open.channelId, userId: open.userId, ephemeral, content, original, deleted: false, files,
    };
    this.responses.push(response);
    if (!ephemeral) this.storePublic(response);
    return response;
  }

  /** A public response is a message of the channel, for everyone. */
  private storePublic(response: InteractionResponse): void {
    this.world.store(this.asMessage(response));
  }

  private asMessage(response: InteractionResponse): Payload {
    return {
      id: response.messageId, channel_id: response.channelId, author: BOT_USER, content: response.content, timestamp: new Date().toISOString(),
      edited_timestamp: null, tts: false, mention_everyone: false, mentions: [], mention_roles: [], attachments: [], embeds: [], pinned: false,
      type: response.original ? 20 : 0, flags: response.ephemeral ? EPHEMERAL : 0,
      interaction_metadata: { id: response.interactionId, type: 2, user: { id: response.userId } },
    };
  }
}

/** What Discord refuses in a CHAT_INPUT command. */
function invalidCommand(command: Payload): Payload | undefined {
  if (typeof command.name !== "string" || !NAME.test(command.name)) return invalidForm("name", "Command name is invalid");
  if (typeof command.description !== "string" || [...command.description].length < 1 || [...command.description].length > 100) return invalidForm("description", "Must be between 1 and 100 in length.");
  const invalid = invalidOptions(command.options ?? [], true);
  if (invalid) return invalid;
  const contexts = command.contexts;
  if (contexts !== undefined && contexts !== null && (!Array.isArray(contexts) || contexts.some((context) => ![0, 1, 2].includes(Number(context))))) return invalidForm("contexts", "Invalid context");
  return undefined;
}
