import type { Payload } from "./fake-discord-world.js";

/**
 * Discord's permission arithmetic, as the service applies it to a request: the guild owner
 * and ADMINISTRATOR have everything; otherwise @everyone's and the member's role permissions,
 * then the channel's overwrites (@everyone, the member's roles together, the member) — a
 * thread uses its parent's. https://discord.com/developers/docs/topics/permissions
 */

export const PERMISSION_BITS = {
  administrator: 1n << 3n,
  addReactions: 1n << 6n,
  viewChannel: 1n << 10n,
  sendMessages: 1n << 11n,
  readMessageHistory: 1n << 16n,
  sendMessagesInThreads: 1n << 38n,
} as const;

const ALL = (1n << 53n) - 1n;

export function permissionBits(guild: Payload, channel: Payload, parent: Payload | undefined, userId: string): bigint {
  if (guild.owner_id === userId) return ALL;
  const member = ((guild.members as Payload[] | undefined) ?? []).find((candidate) => (candidate.user as Payload).id === userId);
  const roleIds = new Set<string>((member?.roles as string[] | undefined) ?? []);
  const roles = (guild.roles as Payload[] | undefined) ?? [];
  let bits = 0n;
  for (const role of roles) if (role.id === guild.id || roleIds.has(String(role.id))) bits |= BigInt(String(role.permissions));
  if ((bits & PERMISSION_BITS.administrator) !== 0n) return ALL;
  const overwrites = ((parent ?? channel).permission_overwrites as Payload[] | undefined) ?? [];
  const apply = (matching: Payload[]): void => {
    let allow = 0n;
    let deny = 0n;
    for (const overwrite of matching) {
      allow |= BigInt(String(overwrite.allow));
      deny |= BigInt(String(overwrite.deny));
    }
    bits = (bits & ~deny) | allow;
  };
  apply(overwrites.filter((overwrite) => overwrite.type === 0 && overwrite.id === guild.id));
  apply(overwrites.filter((overwrite) => overwrite.type === 0 && roleIds.has(String(overwrite.id))));
  apply(overwrites.filter((overwrite) => overwrite.type === 1 && overwrite.id === userId));
  return bits;
}

/** Sets (allow) or clears (deny) `bits` in the member overwrite of `userId` on `channel`. */
export function withMemberOverwrite(channel: Payload, userId: string, allow: bigint, deny: bigint): Payload {
  const overwrites = ((channel.permission_overwrites as Payload[] | undefined) ?? []).filter((overwrite) => !(overwrite.type === 1 && overwrite.id === userId));
  const previous = ((channel.permission_overwrites as Payload[] | undefined) ?? []).find((overwrite) => overwrite.type === 1 && overwrite.id === userId);
  const oldAllow = previous ? BigInt(String(previous.allow)) : 0n;
  const oldDeny = previous ? BigInt(String(previous.deny)) : 0n;
  const nextAllow = (oldAllow & ~deny) | allow;
  const nextDeny = (oldDeny & ~allow) | deny;
  return { ...channel, permission_overwrites: [...overwrites, { id: userId, type: 1, allow: nextAllow.toString(), deny: nextDeny.toString() }] };
}
