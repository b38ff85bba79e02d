/**
 * Watches the commands a connection sends. For each command it records how many answers had come
 * back by then: commands sent with the same count went out together, so the number of distinct
 * counts is the number of round trips the caller waited for.
 */
import type { Command, Redis } from "ioredis";

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
