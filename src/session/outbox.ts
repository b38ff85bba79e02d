import type { Redis } from "ioredis";
import type { OutboundReply } from "../core/channel.js";
import { wellFormedDeep } from "../core/text.js";
import { failReply } from "./dead-letters.js";
import { sessionKeys } from "./keys.js";
import { BEGIN_DELIVERY, FINISH_REPLY, RECORD_PART } from "./scripts.js";
import { runScript } from "./run-script.js";

export type DeliveryStep =
  /** Another delivery holds this session's delivery lease. */
  | { status: "busy"; retryInMs: number }
  /**
   * Nothing left to send; the lease is released. `waiting` (after a finish): messages in the
   * session's inbox and pending batch at that moment (0: the session was idle).
   */
  | { status: "empty"; waiting?: number }
  /**
   * Send `reply` from part `fromPart` on; `queued` replies are in the outbox, this one included.
   * `previewRecorded` (a reply with `preview`, from part 0): its preview has a record to take
   * over (PreviewRecords.take); false: no preview was ever shown, and none can be now.
   */
  | { status: "head"; reply: OutboundReply; fromPart: number; queued: number; previewRecorded: boolean }
  /** Another delivery took the lease: stop, it carries on. */
  | { status: "lost" };

/** How long a mark of a part on the wire (Outbox.markOnWire) is kept. */
export const PARTS_ON_WIRE_TTL_MS = 24 * 60 * 60 * 1000;

/** Why a delivery must stop sending: its lease was taken, or the reply is no longer the head. */
export class DeliveryFencedError extends Error {
  override readonly name = "DeliveryFencedError";
}

/**
 * The session outbox as delivery sees it: one delivery per session at a time (a lease with a
 * token unique to the delivery attempt), progress recorded per reply id, every write fenced.
 */
export class Outbox {
  constructor(private readonly redis: Redis, private readonly prefix: string) {}

  #keys(sessionKey: string): [string, string, string] {
    const keys = sessionKeys(this.prefix, sessionKey);
    return [keys.deliveryLease, keys.outbox, keys.outboxProgress];
  }

  #beginKeys(sessionKey: string): [string, string, string, string] {
    const keys = sessionKeys(this.prefix, sessionKey);
    return [keys.deliveryLease, keys.outbox, keys.outboxProgress, keys.previews];
  }

  #finishKeys(sessionKey: string): [string, string, string, string, string, string] {
    const keys = sessionKeys(this.prefix, sessionKey);
    return [keys.deliveryLease, keys.outbox, keys.outboxProgress, keys.inbox, keys.pending, keys.previews];
  }

  /** Takes the delivery lease and returns the head to send. */
  async begin(sessionKey: string, token: string, leaseMs: number): Promise<DeliveryStep> {
    return toStep((await runScript(this.redis, BEGIN_DELIVERY, 4, ...this.#beginKeys(sessionKey), token, leaseMs)) as unknown[]);
  }

  /** Records part `partIndex` of `replyId` as sent; throws DeliveryFencedError when this delivery may no longer write. */
  async recordPart(sessionKey: string, token: string, replyId: string, partIndex: number, leaseMs: number): Promise<void> {
    const result = await runScript(this.redis, RECORD_PART, 3, ...this.#keys(sessionKey), token, replyId, partIndex + 1, leaseMs);
    if (result === 0) throw new DeliveryFencedError(`another delivery holds ${sessionKey}`);
    if (result === -1) throw new DeliveryFencedError(`reply ${replyId} is no longer the head of ${sessionKey}'s outbox`);
  }

  /**
   * Part `partIndex` of `replyId` was on the wire at `at` (ms), its request carrying a nonce, when
   * its gateway had to exit: kept a day (PARTS_ON_WIRE_TTL_MS). The earliest mark of a part stays:
   * Discord dates a nonce from the message it first made.
   */
  async markOnWire(sessionKey: string, replyId: string, partIndex: number, at: number): Promise<void> {
    const key = sessionKeys(this.prefix, sessionKey).partsOnWire;
    await this.redis.multi().hsetnx(key, `${replyId}:${partIndex}`, String(at)).pexpire(key, PARTS_ON_WIRE_TTL_MS).exec();
  }

  /** When part `partIndex` of `replyId` was marked on the wire (markOnWire), if it was. */
  async onWireSince(sessionKey: string, replyId: string, partIndex: number): Promise<number | undefined> {
    const at = await this.redis.hget(sessionKeys(this.prefix, sessionKey).partsOnWire, `${replyId}:${partIndex}`);
    return at === null ? undefined : Number(at);
  }

  /** The session's marks are settled (the reply they name finished). */
  async clearOnWire(sessionKey: string): Promise<void> {
    await this.redis.del(sessionKeys(this.prefix, sessionKey).partsOnWire);
  }

  /**
   * A failed attempt at the head `reply`: under `limit` failed attempts of that reply, → retry
   * (the job's backoff decides when); at the limit the reply moves to the session's dead
   * letters, a notice takes its place, and → the next step (the notice is its head).
   */
  async fail(reply: OutboundReply, token: string, options: { limit: number; error: string; now: number; leaseMs: number }): Promise<{ status: "retry"; attempts: number } | { status: "dead-lettered"; next: DeliveryStep } | { status: "lost" }> {
    const outcome = await failReply(this.redis, this.prefix, token, reply, options);
    return outcome.status === "dead-lettered" ? { status: "dead-lettered", next: toStep(outcome.next) } : outcome;
  }

  /** Pops `replyId` (sent, or refused for good) and returns the next head. */
  async finish(sessionKey: string, token: string, replyId: string, leaseMs: number): Promise<DeliveryStep> {
    return toStep((await runScript(this.redis, FINISH_REPLY, 6, ...this.#finishKeys(sessionKey), token, replyId, leaseMs)) as unknown[]);
  }
}

function toStep(reply: unknown[]): DeliveryStep {
  switch (reply[0]) {
    case "busy":
      return { status: "busy", retryInMs: Math.max(0, Number(reply[1])) };
    case "empty":
      return reply[1] === undefined ? { status: "empty" } : { status: "empty", waiting: Number(reply[1]) };
    case "lost":
      return { status: "lost" };
    default:
      // Well-formed whatever was stored (a reply written before text was made well-formed on the way in).
      return { status: "head", reply: wellFormedDeep(JSON.parse(String(reply[1])) as OutboundReply), fromPart: Number(reply[2]), queued: Number(reply[3]), previewRecorded: Number(reply[4]) === 1 };
  }
}
