import { randomInt } from "node:crypto";
import type { Redis } from "ioredis";
import type { Config } from "../../config/index.js";
import type { AccessSubject, Platform } from "../core/channel.js";
import { globalKeys } from "../session/keys.js";
import { scanAll } from "../session/scan.js";

export interface AccessLists {
  users: Partial<Record<Platform, readonly string[]>>;
  chats: Partial<Record<Platform, readonly string[]>>;
}

/** The allowlists of the configuration (SPEC §8), by platform. */
export const accessListsFrom = (config: Config): AccessLists => ({
  users: { telegram: config.ALLOWED_TELEGRAM_USERS, discord: config.ALLOWED_DISCORD_USERS },
  chats: { telegram: config.ALLOWED_TELEGRAM_CHATS, discord: config.ALLOWED_DISCORD_CHANNELS },
});

export type AccessVerdict = { allowed: true } | { allowed: false; notice?: string };

export interface PairingRequest {
  code: string;
  platform: Platform;
  userId: string;
  userName: string;
  requestedAt: number;
}

/** Unambiguous letters and digits (no 0/O, 1/I/L): codes are read aloud and retyped. */
const CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_TTL_SECONDS = 3_600;
/** A stranger who keeps writing is reminded of their code at most this often. */
const REMINDER_INTERVAL_MS = 10 * 60_000;

/**
 * Default deny (SPEC §7). Private chats: allowlisted or operator-approved users; anyone else
 * gets a one-time pairing code that the operator approves from the command line. Groups and
 * guild channels: only those allowed explicitly, where every member may talk. The console
 * user is the operator and is trusted.
 */
export class AccessControl {
  readonly #redis: Redis;
  readonly #keys: ReturnType<typeof globalKeys>;
  readonly #lists: AccessLists;

  constructor(redis: Redis, prefix: string, lists: AccessLists) {
    this.#redis = redis;
    this.#keys = globalKeys(prefix);
    this.#lists = lists;
  }

  async check(message: AccessSubject, now = Date.now()): Promise<AccessVerdict> {
    if (message.platform === "console") return { allowed: true };
    // Silence in a group the operator has not enabled: a notice there would be spam.
    if (message.chatType === "group") return (await this.#groupAllowed(message)) ? { allowed: true } : { allowed: false };
    if (await this.isUserAllowed(message.platform, message.userId)) return { allowed: true };
    return { allowed: false, ...(await this.#pairingNotice(message, now)) };
  }

  /** The same verdict as `check`, without its side effects (no pairing code): for scheduled items. */
  async serves(chat: Omit<AccessSubject, "userName">): Promise<boolean> {
    if (chat.platform === "console") return true;
    if (chat.chatType === "group") return this.#groupAllowed(chat);
    return this.isUserAllowed(chat.platform, chat.userId);
  }

  /** A migrated group (Telegram supergroup upgrade) keeps the access its former id had. */
  async #groupAllowed(chat: Pick<AccessSubject, "platform" | "chatId" | "parentChatId">): Promise<boolean> {
    const allowedChats = this.#lists.chats[chat.platform] ?? [];
    return allowedChats.includes(chat.chatId) ||
      (chat.parentChatId !== undefined && allowedChats.includes(chat.parentChatId)) ||
      (await this.#formerIds(chat.platform, chat.chatId)).some((id) => allowedChats.includes(id));
  }

  /**
   * A chat changed its id for good (a Telegram group became a supergroup): the new id keeps the
   * old one's access, so the operator's allowlist naming the old id goes on working.
   */
  async recordChatMigration(platform: Platform, fromChatId: string, toChatId: string): Promise<void> {
    await this.#redis.hset(this.#keys.chatMigrations(platform), toChatId, fromChatId);
  }

  /** The ids this chat had before (a chain, in case it moved more than once). */
  async #formerIds(platform: Platform, chatId: string): Promise<string[]> {
    const ids: string[] = [];
    let current = chatId;
    for (let hop = 0; hop < 4; hop++) {
      const previous = await this.#redis.hget(this.#keys.chatMigrations(platform), current);
      if (previous === null || ids.includes(previous)) break;
      ids.push(previous);
      current = previous;
    }
    return ids;
  }

  async isUserAllowed(platform: Platform, userId: string): Promise<boolean> {
    if ((this.#lists.users[platform] ?? []).includes(userId)) return true;
    return (await this.#redis.sismember(this.#keys.approvedUsers(platform), userId)) === 1;
  }

  async #pairingNotice(message: AccessSubject, now: number): Promise<{ notice?: string }> {
    const userKey = this.#keys.pairingUser(message.platform, message.userId);
    const existing = await this.#redis.hgetall(userKey);
    // Denied: silence until the record expires (the rest of the code's hour); then a new code.
    if (existing.denied) return {};
    if (existing.code && existing.notifiedAt) {
      if (now - Number(existing.notifiedAt) < REMINDER_INTERVAL_MS) return {};
      await this.#redis.hset(userKey, "notifiedAt", String(now));
      return { notice: pairingText(existing.code) };
    }
    const code = Array.from({ length: 8 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join("");
    const request: PairingRequest = {
      code, platform: message.platform, userId: message.userId, userName: message.userName, requestedAt: now,
    };
    await this.#redis
      .multi()
      .set(this.#keys.pairingCode(code), JSON.stringify(request), "EX", CODE_TTL_SECONDS)
      .hset(userKey, "code", code, "notifiedAt", String(now))
      .expire(userKey, CODE_TTL_SECONDS)
      .exec();
    return { notice: pairingText(code) };
  }

  /** Approves a pairing code. → the request it approved, or undefined for an unknown/expired code. */
  async approve(code: string): Promise<PairingRequest | undefined> {
    const normalized = code.replace(/[\s-]/g, "").toUpperCase();
    const raw = await this.#redis.get(this.#keys.pairingCode(normalized));
    if (raw === null) return undefined;
    const request = JSON.parse(raw) as PairingRequest;
    // The user first, then the request: two slots on a Redis Cluster, so not one MULTI. Dying
    // between the two leaves an approved user whose code still approves (harmlessly) for its hour.
    await this.#redis.sadd(this.#keys.approvedUsers(request.platform), request.userId);
    await this.#redis.del(this.#keys.pairingCode(normalized), this.#keys.pairingUser(request.platform, request.userId));
    return request;
  }

  /**
   * Refuses a pairing code: it approves nothing from now on, and its user hears nothing more for
   * the rest of the code's hour (a new message then gets a new code). → the request it refused,
   * or undefined for an unknown/expired code.
   */
  async deny(code: string): Promise<PairingRequest | undefined> {
    const normalized = code.replace(/[\s-]/g, "").toUpperCase();
    const raw = await this.#redis.get(this.#keys.pairingCode(normalized));
    if (raw === null) return undefined;
    const request = JSON.parse(raw) as PairingRequest;
    await this.#redis
      .multi()
      .hset(this.#keys.pairingUser(request.platform, request.userId), "denied", "1")
      .del(this.#keys.pairingCode(normalized))
      .exec();
    return request;
  }

  async revoke(platform: Platform, userId: string): Promise<boolean> {
    return (await this.#redis.srem(this.#keys.approvedUsers(platform), userId)) === 1;
  }

  async approvedUsers(platform: Platform): Promise<string[]> {
    return this.#redis.smembers(this.#keys.approvedUsers(platform));
  }

  async pendingRequests(): Promise<PairingRequest[]> {
    const keys = await scanAll(this.#redis, this.#keys.pairingCode("*"));
    if (keys.length === 0) return [];
    const values = await this.#redis.mget(...keys);
    return values.filter((value): value is string => value !== null).map((value) => JSON.parse(value) as PairingRequest);
  }
}

const pairingText = (code: string) =>
  `Hi! I don't know you yet, so I can't chat with you. Your pairing code is ${code}. ` +
  `Ask the operator of this bot to approve it with: npm run pairing -- approve ${code}`;
