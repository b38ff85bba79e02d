/**
 * What an operator may change from outside the chats: pairing requests (approve, deny) and dead
 * letters (retry, drop). One code path for every door: the CLIs (`npm run pairing`, `npm run
 * admin -- dead-letters …`) and the web console (src/web) call these functions, and each action
 * is logged as `operator-action` with who did it.
 */
import type { Redis } from "ioredis";
import type { OutboundReply, Platform } from "../core/channel.js";
import type { AccessControl, PairingRequest } from "../gateway/access.js";
import type { Logger } from "../logger.js";
import { takeDeadLetter, type DeadLetter } from "../session/dead-letters.js";
import { globalKeys } from "../session/keys.js";

export interface PairingDeps {
  access: Pick<AccessControl, "approve" | "deny">;
  logger: Logger;
}

export interface DeadLetterDeps {
  redis: Redis;
  prefix: string;
  /** Delivery of a retried reply (the platform's queue). */
  enqueueDelivery(sessionKey: string, platform: Platform): Promise<void>;
  logger: Logger;
}

/** Who acted: `cli:<login>` from a terminal, `console:<address>` from the web console, `chat:<tg|dc>:<user id>` from a chat's /pair. */
export type Operator = string;

export async function approvePairing(deps: PairingDeps, operator: Operator, code: string): Promise<PairingRequest | undefined> {
  const request = await deps.access.approve(code);
  deps.logger.info({ operator, action: "pairing-approve", found: request !== undefined, ...(request ? { platform: request.platform, userId: request.userId } : {}) }, "operator-action");
  return request;
}

export async function denyPairing(deps: PairingDeps, operator: Operator, code: string): Promise<PairingRequest | undefined> {
  const request = await deps.access.deny(code);
  deps.logger.info({ operator, action: "pairing-deny", found: request !== undefined, ...(request ? { platform: request.platform, userId: request.userId } : {}) }, "operator-action");
  return request;
}

/**
 * Sends a dead-lettered reply again: it goes back to the tail of its session's outbox (after
 * whatever is waiting there) and is delivered from its first part. → the letter, or undefined
 * when the session has no letter with that id.
 */
export async function retryDeadLetter(deps: DeadLetterDeps, operator: Operator, sessionKey: string, id: string): Promise<DeadLetter | undefined> {
  const letter = await takeDeadLetter(deps.redis, deps.prefix, sessionKey, id, "retry");
  deps.logger.info({ operator, action: "dead-letter-retry", sessionKey, letterId: id, found: letter !== undefined }, "operator-action");
  if (!letter) return undefined;
  const platform = platformOf(letter.item);
  // Listed first: should the enqueue be lost, the sweeper still finds the outbox.
  await deps.redis.sadd(globalKeys(deps.prefix).workSet, sessionKey);
  if (platform) await deps.enqueueDelivery(sessionKey, platform);
  return letter;
}

export async function dropDeadLetter(deps: DeadLetterDeps, operator: Operator, sessionKey: string, id: string): Promise<DeadLetter | undefined> {
  const letter = await takeDeadLetter(deps.redis, deps.prefix, sessionKey, id, "drop");
  deps.logger.info({ operator, action: "dead-letter-drop", sessionKey, letterId: id, found: letter !== undefined }, "operator-action");
  return letter;
}

function platformOf(item: unknown): Platform | undefined {
  if (typeof item !== "object" || item === null) return undefined;
  return (item as Partial<OutboundReply>).target?.platform;
}
