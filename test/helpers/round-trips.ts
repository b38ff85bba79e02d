/**
 * Watches the commands a connection sends. For each command it records how many answers had come
 * back by then: commands sent with the same count went out together, so the number of distinct
 * counts is the number of round trips the caller waited for.
 */
import { createHash } from "node:crypto";
import { Redis, type Command } from "ioredis";

export interface RoundTripCounter {
  /** Each command sent: its name and arguments, and the answers back before it was sent. */
  sent: Array<{ name: string; args: unknown[]; answeredBefore: number }>;
  reset(): void;
  roundTrips(): number;
  /** Stops watching. */
  restore(): void;
}

export function countRoundTrips(redis: Redis): RoundTripCounter {
  let answered = 0;
  const sent: RoundTripCounter["sent"] = [];
  const send = redis.sendCommand;
  redis.sendCommand = ((command: Command, stream?: unknown) => {
    sent.push({ name: command.name, args: command.args, answeredBefore: answered });
    const done = () => {
      answered++;
    };
    command.promise.then(done, done);
    return send.call(redis, command, stream as never);
  }) as Redis["sendCommand"];
  return {
    sent,
    reset() {
      sent.length = 0;
      answered = 0;
    },
    roundTrips: () => new Set(sent.map((entry) => entry.answeredBefore)).size,
    restore() {
      redis.sendCommand = send;
    },
  };
}

export interface TracedCommand {
  name: string;
  args: string[];
  /** Answers the connection had received when this command was sent. */
  answeredBefore: number;
  /** Commands the connection had sent before this one. */
  sentBefore: number;
  /** Commands the connection had sent when this one's answer came back (undefined: not yet). */
  sentBeforeAnswer?: number;
}

/**
 * `countRoundTrips` for every connection created from now on whose CLIENT SETNAME is one of
 * `names` (the roles build their connections themselves): commands per connection name. A later
 * command sent before an earlier one's answer came back (its `sentBefore` < the earlier one's
 * `sentBeforeAnswer`) did not wait for it.
 */
export function traceNamedConnections(names: readonly string[]) {
  const original = Redis.prototype.sendCommand;
  const answered = new WeakMap<Redis, number>();
  const sentOn = new WeakMap<Redis, number>();
  const sent = new Map<string, TracedCommand[]>();
  Redis.prototype.sendCommand = function (this: Redis, command: Command, stream?: unknown) {
    const name = this.options.connectionName;
    if (name !== undefined && names.includes(name)) {
      const list = sent.get(name) ?? [];
      sent.set(name, list);
      const sentBefore = sentOn.get(this) ?? 0;
      sentOn.set(this, sentBefore + 1);
      const entry: TracedCommand = { name: command.name, args: command.args.map(String), answeredBefore: answered.get(this) ?? 0, sentBefore };
      list.push(entry);
      const done = () => {
        answered.set(this, (answered.get(this) ?? 0) + 1);
        entry.sentBeforeAnswer = sentOn.get(this);
      };
      command.promise.then(done, done);
    }
    return original.call(this, command, stream as never);
  } as Redis["sendCommand"];
  return {
    sent: (name: string) => sent.get(name) ?? [],
    reset: () => sent.clear(),
    restore: () => {
      Redis.prototype.sendCommand = original;
    },
  };
}

export const sha = (lua: string) => createHash("sha1").update(lua).digest("hex");
/**
 * Whether a traced command runs `lua`: EVALSHA with its SHA, or a connection's first call of the
 * script, which ioredis's custom command hands to sendCommand as `evalsha` with the script's
 * text (EVAL after a NOSCRIPT).
 */
export const runs = (entry: { name: string; args: readonly unknown[] }, lua: string) =>
  (entry.name === "evalsha" || entry.name === "eval") && (entry.args[0] === sha(lua) || entry.args[0] === lua);
