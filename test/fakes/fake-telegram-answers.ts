/**
 * How the fake Bot API answers a call a test trapped (fake-telegram.ts `loseAnswer`,
 * `holdAnswer`): the answer lost (the connection dropped, or left open for good), an error
 * answered instead (a 5xx after acting), or the real answer held back and sent late — as
 * Telegram does under load, when it acted at once but its answer reached the client only after
 * the client's own deadline.
 */
import type { ServerResponse } from "node:http";

export interface ApiFailure {
  error_code: number;
  description: string;
  parameters?: { retry_after?: number; migrate_to_chat_id?: number };
}

export interface TrappedCall {
  method: string;
  payload: Record<string, unknown>;
}

export interface AnswerTrap<Call extends TrappedCall> {
  method: string;
  /** Telegram performed the call before its answer went missing (or late). */
  applied: boolean;
  /** No answer and the connection left open, never answered. */
  hang: boolean;
  predicate: (call: Call) => boolean;
  /** Answered with this error instead of the real answer. */
  answer?: ApiFailure;
  /** The real answer, this many ms late. */
  answerAfterMs?: number;
}

/** The traps a test set, each springing once, in the order they were set. */
export class AnswerTraps<Call extends TrappedCall> {
  readonly #traps: Array<AnswerTrap<Call>> = [];
  /** Answers written late (holdAnswer), with when they were written: a test can wait for them. */
  readonly lateAnswers: Array<{ call: Call; at: number }> = [];

  add(trap: AnswerTrap<Call>): void {
    this.#traps.push(trap);
  }

  /** The first trap `call` falls into, taken off the list. */
  take(call: Call): AnswerTrap<Call> | undefined {
    const trap = this.#traps.find((candidate) => candidate.method === call.method && candidate.predicate(call));
    if (trap) this.#traps.splice(this.#traps.indexOf(trap), 1);
    return trap;
  }

  /**
   * Writes the answer of `call`, as `trap` (if any) says: `write` is the plain writer. An
   * unapplied trap is answered with (0, undefined) before the call is performed.
   */
  reply(trap: AnswerTrap<Call> | undefined, call: Call, response: ServerResponse, write: (status: number, body: unknown) => void, status: number, body: unknown): void {
    if (!trap) return write(status, body);
    if (trap.answer) return write(trap.answer.error_code, { ok: false, ...trap.answer });
    if (trap.answerAfterMs !== undefined && trap.applied) {
      setTimeout(() => {
        this.lateAnswers.push({ call, at: Date.now() });
        write(status, body);
      }, trap.answerAfterMs);
      return;
    }
    if (!trap.hang) response.destroy();
  }
}
