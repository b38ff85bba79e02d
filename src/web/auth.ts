/**
 * The console's login: one operator token (CONSOLE_WEB_TOKEN) compared in constant time, a
 * session cookie (HttpOnly, SameSite=Strict, Path=/console; Secure when the proxy in front says
 * https) naming a session kept in Redis (by the SHA-256 of its id, so reading Redis gives no
 * usable cookie), and a per-session CSRF token every form posts back. Posts from another origin
 * are refused by their Origin (or Sec-Fetch-Site) header as well.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Redis } from "ioredis";

export const SESSION_COOKIE = "lh_console";
/** A console login lasts this long (no sliding renewal: log in again). */
export const CONSOLE_SESSION_MS = 12 * 3_600_000;
/** Wrong tokens allowed per address within `FAILURE_WINDOW_MS` before logins from it are refused for the rest of the window. */
const MAX_FAILURES = 10;
const FAILURE_WINDOW_MS = 10 * 60_000;

export interface ConsoleSession {
  csrf: string;
  /** Who logged in: `console:<address>` (the operator of every action this session takes). */
  operator: string;
  createdAt: number;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest();

export class ConsoleAuth {
  readonly #expected: Buffer;
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #now: () => number;
  readonly #failures = new Map<string, { count: number; since: number }>();

  constructor(options: { token: string; redis: Redis; prefix: string; now?: () => number }) {
    this.#expected = sha256(options.token);
    this.#redis = options.redis;
    this.#prefix = options.prefix;
    this.#now = options.now ?? Date.now;
  }

  /** Whether `address` may try a token now (too many wrong ones lately: not). */
  mayTry(address: string): boolean {
    const entry = this.#failures.get(address);
    if (!entry || this.#now() - entry.since > FAILURE_WINDOW_MS) return true;
    return entry.count < MAX_FAILURES;
  }

  /** Compared as hashes in constant time: the answer's timing says nothing about the token. */
  checkToken(address: string, given: string): boolean {
    const ok = timingSafeEqual(sha256(given), this.#expected);
    if (!ok) {
      const now = this.#now();
      const entry = this.#failures.get(address);
      if (!entry || now - entry.since > FAILURE_WINDOW_MS) this.#failures.set(address, { count: 1, since: now });
      else entry.count++;
      // Forget old entries now and then, so the map stays small.
      if (this.#failures.size > 1_000) for (const [key, value] of this.#failures) if (now - value.since > FAILURE_WINDOW_MS) this.#failures.delete(key);
    }
    return ok;
  }

  #key(id: string): string {
    return `${this.#prefix}:console-session:${sha256(id).toString("hex")}`;
  }

  async createSession(operator: string): Promise<{ id: string; session: ConsoleSession }> {
    const id = randomBytes(32).toString("base64url");
    const session: ConsoleSession = { csrf: randomBytes(24).toString("base64url"), operator, createdAt: this.#now() };
    await this.#redis.set(this.#key(id), JSON.stringify(session), "PX", CONSOLE_SESSION_MS);
    return { id, session };
  }

  async sessionOf(request: IncomingMessage): Promise<ConsoleSession | undefined> {
    const id = cookieOf(request, SESSION_COOKIE);
    if (!id || id.length > 100) return undefined;
    const raw = await this.#redis.get(this.#key(id));
    return raw === null ? undefined : (JSON.parse(raw) as ConsoleSession);
  }

  async endSession(request: IncomingMessage): Promise<void> {
    const id = cookieOf(request, SESSION_COOKIE);
    if (id) await this.#redis.del(this.#key(id));
  }
}

export function csrfMatches(session: ConsoleSession, given: string | undefined): boolean {
  if (given === undefined) return false;
  return timingSafeEqual(sha256(given), sha256(session.csrf));
}

/** Secure only when a TLS-terminating proxy says the browser spoke https (a Secure cookie over plain http is never sent back). */
export function sessionCookie(request: IncomingMessage, id: string, maxAgeMs = CONSOLE_SESSION_MS): string {
  const secure = forwardedProto(request) === "https" ? "; Secure" : "";
  return `${SESSION_COOKIE}=${id}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(maxAgeMs / 1_000)}${secure}`;
}

export const clearedCookie = (request: IncomingMessage) => sessionCookie(request, "", 0);

/**
 * A state-changing request must come from the console's own pages: its Origin (sent by every
 * browser on a POST) names this host, or, without Origin, Sec-Fetch-Site says same-origin.
 * A request with neither (curl, a script) passes here and still needs the session and its CSRF token.
 */
export function sameOrigin(request: IncomingMessage): boolean {
  const origin = request.headers.origin;
  if (origin !== undefined) {
    const host = request.headers["x-forwarded-host"] ?? request.headers.host;
    return origin === `${forwardedProto(request) ?? "http"}://${String(host)}`;
  }
  const site = request.headers["sec-fetch-site"];
  return site === undefined || site === "same-origin" || site === "none";
}

function forwardedProto(request: IncomingMessage): string | undefined {
  const value = request.headers["x-forwarded-proto"];
  return (Array.isArray(value) ? value[0] : value)?.split(",")[0]?.trim();
}

export function cookieOf(request: IncomingMessage, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? "").split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return rest.join("=");
  }
  return undefined;
}
