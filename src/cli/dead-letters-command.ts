/**
 * `npm run admin -- dead-letters [SESSION] [--json]`: what was moved aside after failing for
 * good (src/session/dead-letters.ts), oldest first per session, with the error and the attempts.
 */
import type { OutboundReply } from "../core/channel.js";
import { listDeadLetters } from "../session/dead-letters.js";
import type { Redis } from "ioredis";

/** What the command uses of the admin CLI's context. */
export interface DeadLettersContext {
  redis: Redis;
  config: { REDIS_PREFIX: string };
  write(text: string): void;
}

/** Longest excerpt of an item shown in the table (`--json` shows all of it). */
const EXCERPT_CHARS = 60;

export async function deadLettersCommand(context: DeadLettersContext, args: readonly string[]): Promise<number> {
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
    return `${new Date(letter.at).toISOString()}  ${letter.sessionKey}  ${letter.kind}  after ${letter.attempts} attempt(s): ${letter.error}\n    ${JSON.stringify(excerpt)}`;
  });
  context.write(`${lines.join("\n")}\n`);
  return 0;
}
