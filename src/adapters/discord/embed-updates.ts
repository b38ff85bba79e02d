/**
 * Waiting for Discord to add a message's embeds (a link's preview it did not have at hand comes
 * in a MESSAGE_UPDATE a moment after the message). discord.js patches its cached Message in
 * place, so the waiter reads the same object again once `updated` names it, or once `ms` passed.
 */
export class EmbedUpdates {
  private readonly waiting = new Map<string, () => void>();

  /** Resolves once `message` has embeds (at once if it has them already) or after `ms`. */
  wait(message: { id: string; embeds: readonly unknown[] }, ms: number): Promise<void> {
    if (message.embeds.length > 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.waiting.get(message.id) === done) this.waiting.delete(message.id);
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.waiting.set(message.id, done);
    });
  }

  /** Discord updated this message (MESSAGE_UPDATE). */
  updated(messageId: string): void {
    this.waiting.get(messageId)?.();
  }
}
