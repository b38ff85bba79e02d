/**
 * `npm run admin -- dead-letters [SESSION] [--json]`: what was moved aside after failing for
 * good (src/session/dead-letters.ts), oldest first per session, with the error and the attempts.
 * `dead-letters retry SESSION ID` sends one again (back to its outbox), `dead-letters drop
 * SESSION ID` discards it: src/operator, the same functions the web console calls.
 */
import type { OutboundReply } from "../core/channel.js";
import type { Logger } from "../logger.js";
import { cliOperator, dropDeadLetter, retryDeadLetter } from "../operator/index.js";
import { createProducers } from "../queue/index.js";
import { listDeadLetters } from "../session/dead-letters.js";
import type { Redis } from "ioredis";

/** What the command uses of the admin CLI's context. */
export interface DeadLettersContext {
  redis: Redis;
  config: { REDIS_PREFIX: string };
  write(text: string): void;
  /** Where retry and drop are logged (operator-action). */
  logger: Logger;
}

/** Longest excerpt of an item shown in the table (`--json` shows all of it). */
const EXCERPT_CHARS = 60;

export async function deadLettersCommand(context: DeadLettersContext, args: readonly string[]): Promise<number> {
  const [action, sessionArg, id] = args;
  if (action === "retry" || action === "drop") return changeLetter(context, action, sessionArg, id);
  const json = args.includes("--json");
  const sessionKey = args.find((arg) => !arg.startsWith("--"));
  const letters = await listDeadLetters(context.redis, context.config.REDIS_PREFIX, sessionKey);
  if (json) {
    context.write(`${JSON.stringify(letters, null, 2)}\n`);
    return 0;
  }
  if (letters.length === 0) {
    context.write(sessionKey ? `No dead letters in ${sessionKey}.\n` : "No dead letters.\n");
    return 0;
  }
  const lines = letters.map((letter) => {
    const text = typeof letter.item === "object" && letter.item !== null ? (letter.item as Partial<OutboundReply>).text ?? "" : String(letter.item);
    const excerpt = text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
    return `${new Date(letter.at).toISOString()}  ${letter.sessionKey}  ${letter.kind}  after ${letter.attempts} attempt(s): ${letter.error}\n    id ${letter.id}  ${JSON.stringify(excerpt)}`;
  });
  context.write(`${lines.join("\n")}\n`);
  return 0;
}

/** Thrown for a retry or drop without its SESSION and ID (the admin CLI prints its usage). */
export class DeadLettersUsageError extends Error {
  override readonly name = "DeadLettersUsageError";
}

async function changeLetter(context: DeadLettersContext, action: "retry" | "drop", sessionKey: string | undefined, id: string | undefined): Promise<number> {
  if (!sessionKey || !id) throw new DeadLettersUsageError(`dead-letters ${action} needs SESSION and the letter's ID (see: npm run admin -- dead-letters)`);
  const prefix = context.config.REDIS_PREFIX;
  if (action === "drop") {
    const letter = await dropDeadLetter({ redis: context.redis, prefix, logger: context.logger, enqueueDelivery: async () => undefined }, cliOperator(), sessionKey, id);
    context.write(letter ? `Dropped dead letter ${id} of ${sessionKey}.\n` : `No dead letter ${id} in ${sessionKey}.\n`);
    return letter ? 0 : 1;
  }
  const producers = createProducers(context.redis, prefix);
  try {
    const letter = await retryDeadLetter({ redis: context.redis, prefix, logger: context.logger, enqueueDelivery: (session, platform) => producers.enqueueDelivery(session, platform) }, cliOperator(), sessionKey, id);
    context.write(letter ? `Dead letter ${id} of ${sessionKey} is back in its outbox; a running gateway delivers it.\n` : `No dead letter ${id} in ${sessionKey}.\n`);
    return letter ? 0 : 1;
  } finally {
    await producers.close();
  }
}
