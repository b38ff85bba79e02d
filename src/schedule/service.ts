/**
 * What users and the agent can do with scheduled items: create, list, edit, pause, resume,
 * cancel; and what the gateway and the operator do when a chat goes away. Every answer is a
 * sentence for the chat (the `/reminders` command replies with it; the `schedule` tool hands
 * it to the model), refusals included: a cap or a permission is not an error.
 */
import type { Config } from "../../config/index.js";
import type { ChatMove, Platform } from "../core/channel.js";
import type { FiringAlarms } from "./alarms.js";
import { confirmation, listText } from "./format.js";
import type { ItemKind, Requester, ScheduleItem } from "./item.js";
import { nextOccurrence } from "./recurrence.js";
import type { ScheduleStore } from "./store.js";
import { resolveTiming, type WhenInput } from "./when.js";
import { isValidTimeZone } from "./zone.js";

export interface ScheduleSettings {
  /** Items one chat, and one user, may have (SCHEDULE_MAX_ITEMS). */
  maxItems: number;
  /** Recurrences may not fire more often (SCHEDULE_MIN_INTERVAL_S). */
  minIntervalMs: number;
  /** Who may change anyone's items in a group (ADMIN_TELEGRAM_USERS, ADMIN_DISCORD_USERS). */
  admins: Partial<Record<Platform, readonly string[]>>;
}

/** The limits of scheduled items, from the configuration. */
export const scheduleSettingsFrom = (config: Config): ScheduleSettings => ({
  maxItems: config.SCHEDULE_MAX_ITEMS,
  minIntervalMs: config.SCHEDULE_MIN_INTERVAL_S * 1_000,
  admins: { telegram: config.ADMIN_TELEGRAM_USERS, discord: config.ADMIN_DISCORD_USERS },
});

/** Longest reminder or task text: it is repeated into the chat and the model's context. */
export const MAX_ITEM_TEXT_CHARS = 2_000;

export type ActionResult = { ok: true; text: string; item: ScheduleItem } | { ok: false; text: string };

export interface CreateInput {
  kind: ItemKind;
  text: string;
  when: WhenInput;
}

export interface EditInput {
  text?: string | undefined;
  kind?: ItemKind | undefined;
  /** A new time; replaces the old timing entirely. */
  when?: WhenInput | undefined;
}

export class ScheduleService {
  readonly #store: ScheduleStore;
  readonly #alarms: FiringAlarms;
  readonly #settings: ScheduleSettings;
  readonly #now: () => number;

  constructor(options: { store: ScheduleStore; alarms: FiringAlarms; settings: ScheduleSettings; now?: () => number }) {
    this.#store = options.store;
    this.#alarms = options.alarms;
    this.#settings = options.settings;
    this.#now = options.now ?? Date.now;
  }

  /**
   * `idempotencyKey`: the same create re-run (a turn retried after its tool call, a worker that
   * died past its lease) finds the item the first run made instead of making a second one.
   */
  async create(requester: Requester, input: CreateInput, idempotencyKey?: string): Promise<ActionResult> {
    const text = input.text.trim();
    const textProblem = checkText(text);
    if (textProblem) return { ok: false, text: textProblem };
    const now = this.#now();
    const zone = zoneOf(requester);
    const timing = resolveTiming(input.when, { zone, now, minIntervalMs: this.#settings.minIntervalMs });
    if (!timing.ok) return { ok: false, text: timing.problem };

    const item: ScheduleItem = {
      id: await this.#store.nextId(),
      sessionKey: requester.sessionKey,
      chat: {
        platform: requester.platform,
        chatId: requester.chatId,
        ...(requester.threadId !== undefined ? { threadId: requester.threadId } : {}),
        ...(requester.parentChatId !== undefined ? { parentChatId: requester.parentChatId } : {}),
        chatType: requester.chatType,
      },
      creator: { userId: requester.userId, userName: requester.userName },
      kind: input.kind,
      text,
      timeZone: zone,
      ...(timing.timing.recurrence ? { recurrence: timing.timing.recurrence } : {}),
      anchorAt: timing.timing.firstRunAt,
      createdAt: now,
      nextRunAt: timing.timing.firstRunAt,
      paused: false,
      revision: 1,
      fireCount: 0,
    };
    const outcome = await this.#store.create(item, this.#settings.maxItems, idempotencyKey);
    if (typeof outcome === "object") {
      const existing = await this.#store.get(outcome.existing);
      if (!existing) return { ok: false, text: `${outcome.existing} was created and is gone since (cancelled, or a one-off that ran).` };
      // Armed again in case the first run died between its create and its arm (arming is idempotent).
      if (!existing.paused) await this.#alarms.arm(existing.id, existing.nextRunAt);
      return { ok: true, item: existing, text: confirmation("Scheduled", existing) };
    }
    if (outcome !== "created") return { ok: false, text: capText(outcome, this.#settings.maxItems) };
    await this.#alarms.arm(item.id, item.nextRunAt);
    return { ok: true, item, text: confirmation("Scheduled", item) };
  }

  /** The items of the requester's conversation, soonest first. */
  async list(requester: Requester): Promise<ScheduleItem[]> {
    const items = await this.#store.listChat(requester.platform, requester.chatId);
    return items.filter((item) => item.sessionKey === requester.sessionKey);
  }

  async listText(requester: Requester): Promise<string> {
    return listText(await this.list(requester), requester.chatType === "group");
  }

  /**
   * Runs a change (edit, pause, resume, cancel) once per `idempotencyKey`: a re-run of the same
   * tool call answers what the first run answered instead of "no such item" or a second change.
   * The answer is recorded after the change, so a run that dies between the two still repeats it.
   */
  async once(idempotencyKey: string | undefined, change: () => Promise<ActionResult>): Promise<string> {
    if (idempotencyKey === undefined) return (await change()).text;
    const earlier = await this.#store.doneText(idempotencyKey);
    if (earlier !== null) return earlier;
    const result = await change();
    await this.#store.recordDone(idempotencyKey, result.text);
    return (await this.#store.doneText(idempotencyKey)) ?? result.text;
  }

  async edit(requester: Requester, itemId: string, changes: EditInput): Promise<ActionResult> {
    return this.#change(requester, itemId, "Changed", (item, now) => {
      if (changes.text !== undefined) {
        const text = changes.text.trim();
        const problem = checkText(text);
        if (problem) return problem;
        item.text = text;
      }
      if (changes.kind !== undefined) item.kind = changes.kind;
      if (changes.when !== undefined) {
        const zone = zoneOf(requester);
        const timing = resolveTiming(changes.when, { zone, now, minIntervalMs: this.#settings.minIntervalMs });
        if (!timing.ok) return timing.problem;
        item.timeZone = zone;
        item.anchorAt = timing.timing.firstRunAt;
        item.nextRunAt = timing.timing.firstRunAt;
        if (timing.timing.recurrence) item.recurrence = timing.timing.recurrence;
        else delete item.recurrence;
      }
      return undefined;
    });
  }

  /** This conversation's items of one kind (a chat's check-ins). */
  async chatItems(requester: Requester, kind: ItemKind): Promise<ScheduleItem[]> {
    const items = await this.#store.listChat(requester.platform, requester.chatId);
    return items.filter((item) => item.sessionKey === requester.sessionKey && item.kind === kind);
  }

  async pause(requester: Requester, itemId: string): Promise<ActionResult> {
    return this.#change(requester, itemId, "Paused", (item) => {
      if (item.paused) return `${item.id} is already paused.`;
      item.paused = true;
      return undefined;
    });
  }

  /** A one-off whose time passed while paused fires at once, marked late; a recurrence goes on from now. */
  async resume(requester: Requester, itemId: string): Promise<ActionResult> {
    return this.#change(requester, itemId, "Resumed", (item, now) => {
      if (!item.paused) return `${item.id} is not paused.`;
      item.paused = false;
      if (item.recurrence && item.nextRunAt <= now) item.nextRunAt = nextOccurrence(item.recurrence, now, item.timeZone, item.anchorAt);
      return undefined;
    });
  }

  async cancel(requester: Requester, itemId: string): Promise<ActionResult> {
    const found = await this.#find(requester, itemId);
    if (!found.ok) return found;
    const { item } = found;
    if (!(await this.#store.remove(item))) return { ok: false, text: notFound(itemId) };
    await this.#alarms.disarm(item.id, item.nextRunAt);
    return { ok: true, item, text: `Cancelled ${item.id}: “${item.text.length > 80 ? `${item.text.slice(0, 79)}…` : item.text}”.` };
  }

  /** The bot left the chat, or the chat is no longer served: its items go. → how many. */
  async removeChat(platform: Platform, chatId: string): Promise<number> {
    return this.#removeAll(await this.#store.listChat(platform, chatId));
  }

  /**
   * A chat changed its id for good (a Telegram group became a supergroup, and its session moved
   * to the new key): its items follow, so they fire into the moved conversation and `/reminders`
   * there lists them. Idempotent (the gateway calls it on every move notice). → how many moved.
   */
  async moveChat(move: Pick<ChatMove, "platform" | "fromChatId" | "toChatId" | "fromSessionKey" | "toSessionKey">): Promise<number> {
    let moved = 0;
    for (const listed of await this.#store.listChat(move.platform, move.fromChatId)) {
      // A firing may advance the item meanwhile (a new revision): read it again and retry.
      let item: ScheduleItem | undefined = listed;
      for (let attempt = 0; item && attempt < 5; attempt++) {
        const after: ScheduleItem = {
          ...structuredClone(item),
          chat: { ...item.chat, chatId: move.toChatId },
          sessionKey: item.sessionKey === move.fromSessionKey ? move.toSessionKey : item.sessionKey,
        };
        const outcome = await this.#store.moveChat(after, move.fromChatId);
        if (outcome === "updated") moved++;
        if (outcome !== "conflict") break;
        item = await this.#store.get(listed.id);
      }
    }
    return moved;
  }

  /** `delete-user`: every item the user made, in any chat, goes. → how many. */
  async removeUserItems(platform: Platform, userId: string): Promise<number> {
    return this.#removeAll(await this.#store.listUser(platform, userId));
  }

  /** A user's access was revoked: the items they made in private chats with the bot go. → how many. */
  async removeUserPrivateItems(platform: Platform, userId: string): Promise<number> {
    const items = await this.#store.listUser(platform, userId);
    return this.#removeAll(items.filter((item) => item.chat.chatType === "private"));
  }

  /**
   * Arms the alarm of every active item (idempotent). Covers an alarm lost between storing an
   * item and arming it, or a firing that died between advancing an item and arming its next run.
   */
  async rearmAll(): Promise<number> {
    let armed = 0;
    const ids = await this.#store.allIds();
    for (let start = 0; start < ids.length; start += 200) {
      for (const item of await this.#store.getMany(ids.slice(start, start + 200))) {
        if (item.paused) continue;
        await this.#alarms.arm(item.id, item.nextRunAt);
        armed++;
      }
    }
    return armed;
  }

  async #removeAll(items: readonly ScheduleItem[]): Promise<number> {
    let removed = 0;
    for (const item of items) {
      if (!(await this.#store.remove(item))) continue;
      removed++;
      await this.#alarms.disarm(item.id, item.nextRunAt);
    }
    return removed;
  }

  /**
   * Read → change a copy → write if nobody changed it meanwhile → move the alarm. `change`
   * returns a refusal text, or undefined when the copy is ready to store.
   */
  async #change(requester: Requester, itemId: string, verb: string, change: (item: ScheduleItem, now: number) => string | undefined): Promise<ActionResult> {
    const found = await this.#find(requester, itemId);
    if (!found.ok) return found;
    const before = found.item;
    const after = structuredClone(before);
    const refusal = change(after, this.#now());
    if (refusal) return { ok: false, text: refusal };
    const outcome = await this.#store.update(after);
    if (outcome === "missing") return { ok: false, text: notFound(itemId) };
    if (outcome === "conflict") return { ok: false, text: `${itemId} changed at the same moment (it may just have fired); please try again.` };
    if (!before.paused) await this.#alarms.disarm(before.id, before.nextRunAt);
    if (!after.paused) await this.#alarms.arm(after.id, after.nextRunAt);
    return { ok: true, item: after, text: confirmation(verb, after) };
  }

  /** The item, if it belongs to the requester's conversation and they may change it. */
  async #find(requester: Requester, itemId: string): Promise<ActionResult> {
    const id = itemId.trim().toLowerCase();
    const item = /^r\d+$/.test(id) ? await this.#store.get(id) : undefined;
    if (!item || item.sessionKey !== requester.sessionKey) return { ok: false, text: notFound(itemId) };
    if (!this.mayChange(requester, item)) {
      return { ok: false, text: `Only ${item.creator.userName}, who set ${item.id}, or an admin of this bot can change or cancel it.` };
    }
    return { ok: true, item, text: "" };
  }

  /** In a group, only the item's creator or an admin; in a private chat (the console is one), its owner. */
  mayChange(requester: Requester, item: ScheduleItem): boolean {
    if (requester.chatType === "private") return true;
    if (requester.userId === item.creator.userId) return true;
    return (this.#settings.admins[requester.platform] ?? []).includes(requester.userId);
  }
}

function checkText(text: string): string | undefined {
  if (text === "") return "What should the reminder say? The text is empty.";
  if (text.length > MAX_ITEM_TEXT_CHARS) return `That text is too long for a reminder (${text.length} characters; at most ${MAX_ITEM_TEXT_CHARS}).`;
  return undefined;
}

/** The chat's zone; an invalid session setting falls back to UTC rather than failing the request. */
const zoneOf = (requester: Requester) => (isValidTimeZone(requester.timeZone) ? requester.timeZone : "UTC");

const notFound = (itemId: string) => `There is no reminder or scheduled task "${itemId.trim()}" in this chat. /reminders lists them.`;

function capText(outcome: "chat-full" | "user-full", max: number): string {
  const where = outcome === "chat-full" ? "This chat already has" : "You already have";
  return `Sorry, I can't schedule that: ${where} ${max} reminders and scheduled tasks, which is the limit. Cancel one first (/reminders lists them, /reminders cancel <id> removes one).`;
}

