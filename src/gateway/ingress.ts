import type { Redis } from "ioredis";
import { wellFormedDeep } from "../core/text.js";
import type { AccessSubject, ChatMove, ChatMoveResult, InboundMessage, IngressPort, Platform, SubmitResult } from "../core/channel.js";
import type { Logger } from "../logger.js";
import { queuePrefixOf, replicaCounter, TURN_QUEUE, type Producers } from "../queue/index.js";

type ReplicaCounter = Awaited<ReturnType<typeof replicaCounter>>;
import { globalKeys } from "../session/keys.js";
import { moveSession } from "../session/move-session.js";
import { readApprovals, type ApprovalsOfSession } from "../session/pending-approval.js";
import { ALREADY_ANSWERED_TEXT, mayAnswer, notYoursText, parseApprovalAction } from "../tools/approval.js";
import type { SessionStore } from "../session/store.js";
import type { AccessControl } from "./access.js";
import { markStage } from "../core/stages.js";

export interface IngressOptions {
  store: SessionStore;
  producers: Producers;
  access: AccessControl;
  redis: Redis;
  prefix: string;
  maxMessageChars: number;
  /** Messages one user may send per minute; 0 = unlimited. */
  rateLimitPerMinute: number;
  /**
   * Replicas that must confirm (WAIT) they hold a message before `submit` resolves, so a
   * failover cannot lose what the platform was told is stored; 0: the master's word suffices.
   */
  minReplicasAck?: number;
  /** How long one WAIT may take before `submit` fails instead (the adapter retries). @defaultValue 3000 */
  replicaAckTimeoutMs?: number;
  /** Who may answer anyone's approval request besides its asker (ADMIN_*_USERS): a press by anyone else is refused here. */
  approvalAdmins?: Partial<Record<Platform, readonly string[]>>;
  /** Called once a message is durable, e.g. to interrupt a running turn (busy mode interrupt, /stop). */
  onAccepted?: (message: InboundMessage) => Promise<void>;
  logger: Logger;
  now?: () => number;
}

/** Fewer replicas confirmed a message than REDIS_MIN_REPLICAS_ACK asks: it is not acknowledged. */
export class ReplicasBehindError extends Error {
  override readonly name = "ReplicasBehindError";
  constructor(sessionKey: string, wanted: number, acked: number, timeoutMs: number) {
    super(`${acked} of ${wanted} Redis replicas confirmed the message for ${sessionKey} within ${timeoutMs} ms: not acknowledged, retry`);
  }
}

/**
 * The one door into the pipeline: access and rate limit (one round trip) → dedupe + inbox
 * (atomic) → enqueue (one round trip with the inbox).
 * `submit` resolves only once the message is in Redis, so an adapter that acknowledges the
 * platform afterwards never loses one. If the enqueue fails after the message is stored, the
 * sweeper enqueues it later; a platform re-delivery meanwhile is a duplicate.
 */
export class Ingress implements IngressPort {
  readonly #options: IngressOptions;
  readonly #keys: ReturnType<typeof globalKeys>;

  constructor(options: IngressOptions) {
    this.#options = options;
    this.#keys = globalKeys(options.prefix);
  }

  /** The access check alone (IngressPort.admit): an adapter asks before it answers, downloads or fetches anything. */
  async admit(subject: AccessSubject): Promise<{ allowed: boolean; notice?: string }> {
    const verdict = await this.#options.access.check(subject, this.#options.now?.() ?? Date.now());
    if (!verdict.allowed) this.#options.logger.info({ platform: subject.platform, userId: subject.userId, chatType: subject.chatType }, "message-denied");
    return verdict;
  }

  async submit(message: InboundMessage): Promise<SubmitResult> {
    const { store, producers, access, logger } = this.#options;
    markStage("ingress", message.sessionKey);
    const now = this.#options.now?.() ?? Date.now();
    // Built only when something is logged: an accepted message logs nothing at info.
    const log = () => logger.child({ sessionKey: message.sessionKey, messageId: message.messageId });

    // Access and the rate counter are asked together (one round trip, not two); a denied
    // message is counted too, which changes nothing: it is dropped either way.
    const [verdict, rate] = await Promise.all([access.check(message, now), this.#rateCheck(message, now)]);
    if (!verdict.allowed) {
      log().info({ platform: message.platform, userId: message.userId, chatType: message.chatType }, "message-denied");
      return verdict.notice === undefined ? { status: "denied" } : { status: "denied", notice: verdict.notice };
    }
    if (rate) return rate;
    const refused = message.action ? await this.#pressRefusal(message) : undefined;
    if (refused) return refused;

    // Well-formed from here on: half an emoji from a client must not reach a Lua script or a model.
    const normalized = this.#truncate(wellFormedDeep(message));
    // A duplicate enqueues too: a platform re-delivers what it thinks unstored, e.g. after a
    // gateway died between storing a message and enqueueing its turn (deduplicated: cheap).
    // Stored already if the enqueue fails: the sweeper will enqueue it; do not fail the platform ack.
    const enqueue = () => producers.enqueueTurn(message.sessionKey).catch((error: unknown) => log().warn({ err: error }, "enqueue-failed-sweeper-will-retry"));
    // On the store's own connection the enqueue goes out with the append and runs after it in
    // Redis (store.appendInbox): one round trip, and no worker can see the job before the
    // message. On another connection that order would not hold, so it waits for the append.
    const together = producers.connection === store.redis;
    // Fixed before the writes go out: which connections (a Cluster: which nodes) carry them.
    const replicas = await this.#replicaCounter(message, together);
    const added = together
      ? await store.appendInbox(normalized, now, enqueue)
      : await store.appendInbox(normalized, now).then(async (stored) => (await enqueue(), stored));
    // A duplicate waits too: its first copy may be the one the replicas have not seen yet.
    await this.#replicated(message, replicas);
    if (!added) {
      log().info("message-duplicate");
      return { status: "duplicate" };
    }
    markStage("enqueued", message.sessionKey);
    if (logger.isLevelEnabled("debug")) log().debug({ chars: normalized.text.length }, "message-accepted");
    await this.#options.onAccepted?.(normalized);
    return { status: "accepted" };
  }

  /**
   * A chat's id changed for good: its access, then its session (one atomic move), then the
   * moved session's pending work is enqueued under the new key.
   */
  async moveChat(move: ChatMove): Promise<ChatMoveResult> {
    const { access, redis, prefix, producers, logger } = this.#options;
    await access.recordChatMigration(move.platform, move.fromChatId, move.toChatId);
    const { result, work } = await moveSession(redis, prefix, move);
    const log = logger.child({ fromSessionKey: move.fromSessionKey, toSessionKey: move.toSessionKey });
    if (result === "target-exists") log.warn("chat-moved-session-kept: the new chat already has a session, so the old one stays under its old key");
    else log.info({ result, ...work }, "chat-moved");
    if (result === "moved") {
      if (work.inbox > 0 || work.pending > 0) await producers.enqueueTurn(move.toSessionKey);
      if (work.outbox > 0) await producers.enqueueDelivery(move.toSessionKey, move.platform);
    }
    return result;
  }

  /**
   * What WAIT will count: the connection(s) carrying the append, the work-set entry and (on the
   * same connection) the enqueue — on a Cluster the nodes of the session's slot, of the work
   * set's and of the turns queue's.
   */
  async #replicaCounter(message: InboundMessage, withQueue: boolean): Promise<ReplicaCounter | undefined> {
    if ((this.#options.minReplicasAck ?? 0) === 0) return undefined;
    const { store, producers, prefix } = this.#options;
    const queueKey = `${queuePrefixOf(producers.connection, prefix, TURN_QUEUE)}:${TURN_QUEUE}:id`;
    return replicaCounter(store.redis, [store.keys(message.sessionKey).inbox, this.#keys.workSet, ...(withQueue ? [queueKey] : [])]);
  }

  /**
   * WAIT on the connections that carried this message's writes. Too few replicas (or a
   * connection that changed under the writes: see replicaCounter): a failure, so the adapter does
   * not acknowledge the platform, retries, and the dedupe record makes the retry harmless.
   */
  async #replicated(message: InboundMessage, replicas: ReplicaCounter | undefined): Promise<void> {
    if (!replicas) return;
    const wanted = this.#options.minReplicasAck ?? 0;
    const timeoutMs = this.#options.replicaAckTimeoutMs ?? 3_000;
    const acked = await replicas.count(wanted, timeoutMs);
    if (acked < wanted) throw new ReplicasBehindError(message.sessionKey, wanted, acked, timeoutMs);
  }

  /**
   * A press on someone else's approval request is refused before it is stored, so the adapter
   * answers the presser privately while the press is live (issue 30): the turn's own refusal
   * could only come later, when a Discord interaction may be forgotten (a gateway restart, an
   * expired token) and a Telegram press can no longer take an alert. So is a press on a request a
   * press already answered — a double tap, or an old request after /new (issue 28): it is never
   * stored, so it can never reach the conversation, and the request keeps its outcome. Anything
   * unclear (no such approval pending, the state unreadable) goes on to the turn, which decides again.
   */
  async #pressRefusal(message: InboundMessage): Promise<SubmitResult | undefined> {
    const pressed = parseApprovalAction(message.action?.id ?? "");
    if (!pressed) return undefined;
    const { store, logger } = this.#options;
    const { pending, answered } = await readApprovals(store.redis, store.prefix, message.sessionKey).catch((error: unknown): ApprovalsOfSession => {
      logger.warn({ sessionKey: message.sessionKey, err: error }, "pending approval unreadable; the turn checks the press");
      return { answered: [] };
    });
    if (pending?.id !== pressed.approvalId && answered.includes(pressed.approvalId)) {
      logger.info({ sessionKey: message.sessionKey, approvalId: pressed.approvalId, userId: message.userId }, "tool-approval-press-already-answered");
      return { status: "refused", notice: ALREADY_ANSWERED_TEXT };
    }
    if (!pending || pending.id !== pressed.approvalId || mayAnswer(pending, message, this.#options.approvalAdmins ?? {})) return undefined;
    logger.info({ sessionKey: message.sessionKey, approvalId: pending.id, userId: message.userId }, "tool-approval-refused-not-the-requester");
    return { status: "refused", notice: notYoursText(pending) };
  }

  #truncate(message: InboundMessage): InboundMessage {
    const limit = this.#options.maxMessageChars;
    if (message.text.length <= limit) return message;
    return { ...message, text: `${message.text.slice(0, limit)}\n[message truncated: ${message.text.length} characters, the limit is ${limit}]` };
  }

  async #rateCheck(message: InboundMessage, now: number): Promise<SubmitResult | undefined> {
    const limit = this.#options.rateLimitPerMinute;
    if (limit === 0 || message.platform === "console") return undefined;
    const minute = Math.floor(now / 60_000);
    const key = this.#keys.rate(message.platform, message.userId, minute);
    const [[, count]] = (await this.#options.redis.multi().incr(key).expire(key, 120).exec()) as [[Error | null, number]];
    if (count <= limit) return undefined;
    // One polite notice per minute; further messages are dropped silently.
    return count === limit + 1
      ? { status: "rate-limited", notice: `You're sending messages faster than I can keep up (more than ${limit} a minute). Please wait a moment.` }
      : { status: "rate-limited" };
  }
}
