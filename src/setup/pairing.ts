/**
 * Pairing the operator's own account during setup: the platforms' adapters run as the gateway
 * runs them, but their messages come here instead of the pipeline. A private message goes
 * through the gateway's own access check (AccessControl: a stranger gets the pairing code, the
 * same notice as ever); setup hears of it and the operator approves it in place through
 * src/operator, the code path of `npm run pairing -- approve` and the web console.
 */
import { randomUUID } from "node:crypto";
import type { ChannelAdapter, InboundMessage, IngressPort, SubmitResult } from "../adapters/index.js";
import type { AccessSubject } from "../core/channel.js";
import type { AccessControl, PairingRequest } from "../gateway/access.js";
import type { Logger } from "../logger.js";
import { approvePairing, cliOperator } from "../operator/index.js";

export interface PairingCandidate {
  /** The message's sender and where to answer them. */
  message: Pick<InboundMessage, "platform" | "userId" | "userName" | "chatId" | "messageId" | "sessionKey" | "text">;
  /** The pending request (its code) when the sender is a stranger; undefined when already allowed. */
  request?: PairingRequest;
}

const ALREADY_ALLOWED = "You can already talk to this bot. It is being set up right now and answers once it starts.";

/** The ingress the adapters get during setup: it admits nobody and reports who wrote. */
export class PairingDesk implements IngressPort {
  readonly #access: AccessControl;
  readonly #waiting: Array<(candidate: PairingCandidate) => void> = [];
  readonly #heard: PairingCandidate[] = [];

  constructor(access: AccessControl) {
    this.#access = access;
  }

  async submit(message: InboundMessage): Promise<SubmitResult> {
    const verdict = await this.#screen(message, message);
    return verdict.notice === undefined ? { status: "denied" } : { status: "denied", notice: verdict.notice };
  }

  async admit(subject: AccessSubject): Promise<{ allowed: boolean; notice?: string }> {
    return this.#screen(subject, undefined);
  }

  /** The next private message's sender (those heard before this call first). */
  next(signal: AbortSignal): Promise<PairingCandidate> {
    const heard = this.#heard.shift();
    if (heard) return Promise.resolve(heard);
    return new Promise((resolve, reject) => {
      const waiter = (candidate: PairingCandidate) => resolve(candidate);
      this.#waiting.push(waiter);
      signal.addEventListener("abort", () => {
        const index = this.#waiting.indexOf(waiter);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(signal.reason);
      }, { once: true });
    });
  }

  async #screen(subject: AccessSubject, message: InboundMessage | undefined): Promise<{ allowed: false; notice?: string }> {
    // Groups are not where an operator pairs; the gateway is silent there too.
    if (subject.chatType !== "private" || subject.platform === "console") return { allowed: false };
    const verdict = await this.#access.check(subject);
    if (verdict.allowed) {
      this.#hear({ message: candidateMessage(subject, message) });
      return { allowed: false, notice: ALREADY_ALLOWED };
    }
    const request = (await this.#access.pendingRequests()).find((pending) => pending.platform === subject.platform && pending.userId === subject.userId);
    // No request: a code this user was denied is still in its hour; the gateway stays silent too.
    if (request) this.#hear({ message: candidateMessage(subject, message), request });
    return verdict.notice === undefined ? { allowed: false } : { allowed: false, notice: verdict.notice };
  }

  #hear(candidate: PairingCandidate): void {
    const waiter = this.#waiting.shift();
    if (waiter) waiter(candidate);
    else if (!this.#heard.some((heard) => heard.message.platform === candidate.message.platform && heard.message.userId === candidate.message.userId)) this.#heard.push(candidate);
  }
}

function candidateMessage(subject: AccessSubject, message: InboundMessage | undefined): PairingCandidate["message"] {
  return {
    platform: subject.platform,
    userId: subject.userId,
    userName: subject.userName,
    chatId: subject.chatId,
    messageId: message?.messageId ?? "",
    sessionKey: message?.sessionKey ?? "",
    text: message?.text ?? "",
  };
}

/**
 * Approves the candidate's code as the operator at this terminal (logged as `operator-action`
 * like every approval) and tells them in their chat. → the approved request, or undefined when
 * the code expired in the meantime.
 */
export async function approveInPlace(deps: { access: AccessControl; logger: Logger; adapter: ChannelAdapter | undefined }, candidate: PairingCandidate): Promise<PairingRequest | undefined> {
  if (!candidate.request) return undefined;
  const approved = await approvePairing({ access: deps.access, logger: deps.logger }, cliOperator(), candidate.request.code);
  if (approved && deps.adapter) {
    const { message } = candidate;
    await deps.adapter.send({
      replyId: `setup-${randomUUID()}`,
      sessionKey: message.sessionKey,
      target: { platform: message.platform, chatId: message.chatId, ...(message.messageId ? { replyToMessageId: message.messageId } : {}) },
      text: "You're paired: this bot's operator approved you. It answers once it starts.",
      inReplyTo: message.messageId ? [message.messageId] : [],
      kind: "notice",
    }, { fromPart: 0, onPartSent: async () => {} }).catch((error: unknown) => deps.logger.warn({ err: error instanceof Error ? error.message : String(error) }, "setup-pairing-confirmation-not-sent"));
  }
  return approved;
}
