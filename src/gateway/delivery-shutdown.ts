/**
 * How deliveries stop when their gateway does (docs/architecture.md, "Shutdown"), apart from the
 * claim-send-record loop in delivery.ts. From `stop()` on, no delivery starts another part: the
 * part in flight finishes, is recorded, and the rest of its reply is handed back to the next
 * gateway. When the process must exit before that (its shutdown time ran out), each part still in
 * flight is recorded as sent first, so the next gateway never sends it again — but a Discord
 * channel part on the wire (its nonce returns the message already made) is marked instead, with
 * when it went out: the next gateway resends it within NONCE_SAFE_MS, and counts it as sent after.
 */
import type { OutboundReply, Platform, RequestOutcome } from "../core/channel.js";
import type { Logger } from "../logger.js";
import type { Outbox } from "../session/outbox.js";

/** The gateway is stopping: the part just sent is recorded, the rest of the reply is left to the next gateway. */
export class DeliveryHandedBackError extends Error {
  override readonly name = "DeliveryHandedBackError";
}

/** A session's part in flight: on the wire (`sent` false), or answered and not yet recorded. */
export interface PartInFlight {
  token: string;
  reply: OutboundReply;
  part: number;
  sent: boolean;
  /** Its request carries a nonce Discord enforces (SendOptions.onNoncedPart). */
  nonced?: true;
}

export interface DeliveryShutdownOptions {
  outbox: Pick<Outbox, "recordPart" | "markOnWire">;
  leaseMs: number;
  log: Logger;
  /** A part on the wire at the exit was counted as sent (its outcome unknown). */
  onPartUnconfirmed?: ((platform: Platform) => void) | undefined;
}

export class DeliveryShutdown {
  #stopping = false;
  /**
   * The part each session has in flight now: on the wire (SendOptions.onPartRequest), or
   * answered and its record — its own, or the reply's finish for the last part — not stored yet.
   * A record can wait behind a lease heartbeat on a stalled connection (LeaseKeeper.paused): a
   * part answered then was neither on the wire nor recorded at the exit, and the next gateway
   * sent it again (faults/delivery-sigterm.test.ts).
   */
  readonly #inFlight = new Map<string, PartInFlight>();

  constructor(private readonly options: DeliveryShutdownOptions) {}

  /** Set by `stop`: no delivery starts another part. */
  get stopping(): boolean {
    return this.#stopping;
  }

  stop(): void {
    this.#stopping = true;
  }

  /**
   * SendOptions.onPartRequest of one session's delivery: the request carrying `part` went out;
   * or it ended — answered with success (the part is out) or with its outcome unknown (it may
   * be out): in flight until its report is recorded, whatever runs between the answer and the
   * report (`sent`), an exit timer included; or failed before acting: nothing in flight.
   */
  requested(sessionKey: string, token: string, reply: OutboundReply, part: number, onWire: boolean, outcome?: RequestOutcome): void {
    if (onWire || outcome === "unknown") this.#inFlight.set(sessionKey, { token, reply, part, sent: false });
    else if (outcome === "answered") this.#inFlight.set(sessionKey, { token, reply, part, sent: true });
    else this.#inFlight.delete(sessionKey);
  }

  /** SendOptions.onNoncedPart: `part` goes out with a nonce, on the wire until its report (`sent`). */
  noncedOnWire(sessionKey: string, token: string, reply: OutboundReply, part: number): void {
    this.#inFlight.set(sessionKey, { token, reply, part, sent: false, nonced: true });
  }

  /**
   * `part` went out (or counts as sent): in flight until `recorded`. An adapter that cannot tell
   * a success from a failure in `requested` (a Discord interaction's) leaves nothing in flight
   * between the answer and this report: there it relies on no exit timer running between the two.
   */
  sent(sessionKey: string, token: string, reply: OutboundReply, part: number): PartInFlight {
    const entry = { token, reply, part, sent: true };
    this.#inFlight.set(sessionKey, entry);
    return entry;
  }

  /**
   * `entry`'s record is stored. Stopping: the delivery ends here (DeliveryHandedBackError), its
   * part recorded — unless the rest can be sent by this process alone (PartSent.boundHere).
   */
  recorded(sessionKey: string, entry: PartInFlight, boundHere = false): void {
    if (this.#inFlight.get(sessionKey) === entry) this.#inFlight.delete(sessionKey);
    if (this.#stopping && !boundHere) throw new DeliveryHandedBackError(`${sessionKey}: the gateway is stopping after part ${entry.part + 1} of ${entry.reply.replyId}`);
  }

  /** Nothing of the session's delivery is in flight any more: its reply finished (its last part recorded with it), moved aside, or the delivery ended. */
  settled(sessionKey: string): void {
    this.#inFlight.delete(sessionKey);
  }

  /** DeliveryWorker.recordPartsInFlight: the process exits now. */
  async recordPartsInFlight(): Promise<void> {
    const { outbox, leaseMs, log } = this.options;
    await Promise.all([...this.#inFlight].map(async ([sessionKey, { token, reply, part, sent, nonced }]) => {
      const where = { sessionKey, replyId: reply.replyId, chatId: reply.target.chatId, part, reason: "shutdown-timed-out" };
      if (nonced === true && !sent) {
        // Not recorded: the next gateway resends it while Discord knows its nonce (delivery.ts, NONCE_SAFE_MS).
        log.info(where, "reply-part-marked-on-wire");
        await outbox.markOnWire(sessionKey, reply.replyId, part, Date.now())
          .catch((error: unknown) => log.warn({ sessionKey, replyId: reply.replyId, part, err: error }, "reply-part-not-marked-before-exit"));
        return;
      }
      if (sent) log.info(where, "reply-part-recorded-before-exit");
      else {
        log.warn(where, "reply-part-unconfirmed");
        this.options.onPartUnconfirmed?.(reply.target.platform);
      }
      // The reply's last part too: a delivery resumed past the last part sends nothing and finishes the reply.
      await outbox.recordPart(sessionKey, token, reply.replyId, part, leaseMs)
        .catch((error: unknown) => log.warn({ sessionKey, replyId: reply.replyId, part, err: error }, "reply-part-not-recorded-before-exit"));
    }));
  }
}
