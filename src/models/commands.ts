/**
 * `/model`, `/persona` (issue #17) and `/timezone`. They change the session's `chat` settings,
 * which the turn reads at the start of every segment: the switch applies from the very next
 * request. In groups only admins may change them.
 */
import type { InboundMessage, Platform } from "../core/channel.js";
import { canonicalTimeZone, formatStamp } from "../core/time-stamp.js";
import type { SessionState } from "../session/state.js";
import { platformPrefix } from "../tools/access.js";
import type { CatalogueModel, ModelCatalogue, ModelRequester } from "./catalogue.js";
import { MAX_PERSONA_CHARS } from "./persona.js";

export type Admins = Partial<Record<Platform, readonly string[]>>;

export const isAdmin = (entry: Pick<InboundMessage, "platform" | "userId">, admins: Admins): boolean =>
  (admins[entry.platform] ?? []).includes(entry.userId);

/** In a group only admins may change what the whole chat gets; in a private chat, its person. */
export const mayChangeChat = (entry: InboundMessage, admins: Admins): boolean => entry.chatType !== "group" || isAdmin(entry, admins);

export function requesterOf(entry: InboundMessage, admins: Admins): ModelRequester {
  const prefix = platformPrefix(entry.platform);
  return {
    chatKeys: [entry.sessionKey, `${prefix}:${entry.chatId}`, ...(entry.parentChatId ? [`${prefix}:${entry.parentChatId}`] : [])],
    userKey: `${prefix}:${entry.userId}`,
    admin: isAdmin(entry, admins),
  };
}

const thousands = (tokens: number) => (tokens >= 1_000_000 ? `${Math.round(tokens / 100_000) / 10}M` : `${Math.round(tokens / 1_000)}K`);

function describeModel(model: CatalogueModel, window: number): string {
  const prices = model.prices.input + model.prices.output > 0 ? `, $${model.prices.input}/$${model.prices.output} per 1M in/out` : "";
  return `${model.id}, ${thousands(window)} context${prices}${model.vision ? ", images" : ""}`;
}

export interface ModelCommandInput {
  catalogue: ModelCatalogue;
  state: SessionState;
  entry: InboundMessage;
  admins: Admins;
  args: string;
  /** The window the context engine uses for a model (catalogue, table, or learned). */
  windowOf(model: CatalogueModel): number;
}

export function modelCommand({ catalogue, state, entry, admins, args, windowOf }: ModelCommandInput): string {
  const current = catalogue.active(state.chat?.model);
  const requester = requesterOf(entry, admins);
  const wanted = args.trim();
  if (wanted === "") {
    const lines = catalogue.models
      .filter((model) => catalogue.mayUse(model, requester))
      .map((model) => {
        const aliases = model.aliases.length > 0 ? ` (also: ${model.aliases.join(", ")})` : "";
        const marks = [model.name === catalogue.defaultName ? "default" : "", model.name === current.name ? "current" : ""].filter(Boolean);
        return `• ${model.name}${aliases} — ${describeModel(model, windowOf(model))}${marks.length > 0 ? ` [${marks.join(", ")}]` : ""}`;
      });
    return [`Current model: ${current.name} (${current.id})`, "", ...lines, "", "Switch with /model <name>; /model default returns to the configured default."].join("\n");
  }
  if (!mayChangeChat(entry, admins)) return "Only an admin can change the model of a group.";
  if (wanted.toLowerCase() === "default") {
    const previous = state.chat?.model;
    state.chat = { ...state.chat, confirmModel: true };
    delete state.chat.model;
    const model = catalogue.default;
    if (previous !== undefined && previous !== model.name) dropLearnedWindow(state);
    return `This chat is back to the default model: ${model.name} (${describeModel(model, windowOf(model))}).`;
  }
  const model = catalogue.find(wanted);
  if (!model) return `There is no model "${wanted}". Send /model to see the choices.`;
  if (!catalogue.mayUse(model, requester)) return `The model ${model.name} is not available in this chat.`;
  if (model.name !== current.name) dropLearnedWindow(state);
  state.chat = { ...state.chat, model: model.name, confirmModel: true };
  return `This chat now uses ${model.name} (${describeModel(model, windowOf(model))}), from the next message on.`;
}

/** A window learned from the previous model's overflow error says nothing about the new one. */
function dropLearnedWindow(state: SessionState): void {
  delete (state.engine as { learnedWindow?: number }).learnedWindow;
}

export interface PersonaCommandInput {
  personas: Readonly<Record<string, string>>;
  state: SessionState;
  entry: InboundMessage;
  admins: Admins;
  args: string;
}

export function personaCommand({ personas, state, entry, admins, args }: PersonaCommandInput): string {
  const wanted = args.trim();
  const names = Object.keys(personas);
  if (wanted === "") {
    const current = state.chat?.persona
      ? `Current persona: ${state.chat.personaName ?? "custom"} — ${state.chat.persona}`
      : "No persona is set.";
    const named = names.length > 0 ? `Named personas: ${names.join(", ")}.` : "No named personas are configured.";
    return [current, named, "Set one with /persona <name or text>; /persona off removes it."].join("\n");
  }
  if (!mayChangeChat(entry, admins)) return "Only an admin can change the persona of a group.";
  if (wanted.toLowerCase() === "off") {
    if (state.chat) {
      delete state.chat.persona;
      delete state.chat.personaName;
    }
    return "Persona removed.";
  }
  const named = Object.entries(personas).find(([name]) => name.toLowerCase() === wanted.toLowerCase());
  if (named) {
    state.chat = { ...state.chat, persona: named[1], personaName: named[0] };
    return `Persona set: ${named[0]}.`;
  }
  if (wanted.length > MAX_PERSONA_CHARS) return `A persona may be at most ${MAX_PERSONA_CHARS} characters.`;
  state.chat = { ...state.chat, persona: wanted };
  delete state.chat.personaName;
  return "Persona set.";
}

export interface TimeZoneCommandInput {
  state: SessionState;
  entry: InboundMessage;
  admins: Admins;
  args: string;
  /** The deployment's zone (TZ), used while the chat has none of its own. */
  fallback: string;
  now: number;
}

/**
 * `/timezone` shows the chat's zone and its local time; `/timezone <IANA name>` (any case) sets
 * it, `/timezone default` returns to TZ. Stamps already written keep their zone (the cached
 * prefix never changes); new messages, reminders and /context use the new one.
 */
export function timeZoneCommand({ state, entry, admins, args, fallback, now }: TimeZoneCommandInput): string {
  const wanted = args.trim();
  const own = state.chat?.timeZone;
  if (wanted === "") {
    const zone = own ?? fallback;
    return [
      own === undefined ? `Time zone: ${zone} (the default)` : `Time zone: ${zone} (this chat's own; the default is ${fallback})`,
      `Local time: ${formatStamp(now, zone)}`,
      "Set one with /timezone <IANA name>, e.g. Europe/Berlin; /timezone default returns to the default.",
    ].join("\n");
  }
  if (!mayChangeChat(entry, admins)) return "Only an admin can change the time zone of a group.";
  if (wanted.toLowerCase() === "default") {
    if (state.chat) delete state.chat.timeZone;
    return `This chat is back to the default time zone, ${fallback} (now ${formatStamp(now, fallback)}).`;
  }
  const zone = canonicalTimeZone(wanted);
  if (zone === undefined) return `"${wanted}" is not a time zone I know. Use an IANA name, e.g. Europe/Berlin, America/New_York, Asia/Tokyo.`;
  state.chat = { ...state.chat, timeZone: zone };
  return `This chat's time zone is now ${zone} (now ${formatStamp(now, zone)}), from the next message on.`;
}
