/**
 * Button presses held unanswered for a moment (answerCallbackQuery can answer a press only
 * once): when the worker's reply to the press is for the presser alone (the wrong person pressed
 * an approval button), it is shown to them as an alert (show_alert) instead of a message to the
 * whole chat. Any other reply to the press, or the hold running out, answers it plainly and
 * stops the client's spinner. Held in memory: a reply that finds no held press (another replica
 * took the press, or the hold ran out) is sent as an ordinary message — except one for the
 * presser alone, which the adapter drops rather than show the chat.
 */
import type { Api } from "grammy";
import type { Logger } from "../../logger.js";
import { alertText } from "./actions.js";
import { describeError } from "./send-reply.js";

export class PressAnswers {
  /** By the press's inbound message id (`cb:<query id>`). */
  private readonly held = new Map<string, { queryId: string; timer: NodeJS.Timeout }>();

  /** `holdMs` stays well inside the ~15 s in which Telegram takes an answer to a press. */
  constructor(private readonly api: Api, private readonly logger: Logger, private readonly holdMs: number, private readonly track: (call: Promise<unknown>) => void) {}

  hold(messageId: string, queryId: string): void {
    const timer = setTimeout(() => this.track(this.answer([messageId])), this.holdMs);
    timer.unref();
    this.held.set(messageId, { queryId, timer });
  }

  /** Whether a press among `inReplyTo` is still held (its answer can carry an alert). */
  holds(inReplyTo: readonly string[]): boolean {
    return inReplyTo.some((messageId) => this.held.has(messageId));
  }

  /**
   * Answers the held presses among `inReplyTo`: with `alert` as an alert when given. → whether
   * the alert was shown (false: none held, or Telegram refused the answer).
   */
  async answer(inReplyTo: readonly string[], alert?: string): Promise<boolean> {
    let shown = false;
    for (const messageId of inReplyTo) {
      const press = this.held.get(messageId);
      if (!press) continue;
      this.held.delete(messageId);
      clearTimeout(press.timer);
      const text = alert === undefined ? undefined : alertText(alert);
      try {
        await this.api.answerCallbackQuery(press.queryId, text === undefined ? {} : { text, show_alert: true });
        shown ||= text !== undefined;
      } catch (error) {
        this.logger.debug({ err: describeError(error) }, "answerCallbackQuery failed");
      }
    }
    return shown;
  }

  /** Stopping: every held press is answered now. */
  releaseAll(): Promise<boolean> {
    return this.answer([...this.held.keys()]);
  }
}
