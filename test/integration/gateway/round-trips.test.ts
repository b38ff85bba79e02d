/**
 * Redis work per turn, counted (issue #18): the ingress stores and enqueues a message in one
 * round trip, and one whole turn (ingress → worker → delivery) sends a bounded number of
 * commands on the roles' own connections. Counts, not timings: they hold on a loaded machine.
 */
import { connect, type Socket } from "node:net";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AccessControl, accessListsFrom } from "../../../src/gateway/access.js";
import { Ingress } from "../../../src/gateway/ingress.js";
import { silentLogger } from "../../../src/logger.js";
import { CONNECTION_NAMES, createProducers, createRedis, deliveryQueueName, TURN_QUEUE } from "../../../src/queue/index.js";
import { globalKeys } from "../../../src/session/keys.js";
import { END_TURN, FINISH_REPLY, HEARTBEAT, RECORD_PART, SESSION_WORK } from "../../../src/session/scripts.js";
import { SessionStore } from "../../../src/session/store.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { countRoundTrips, runs, sha, traceNamedConnections } from "../../helpers/round-trips.js";
import { settled } from "../../helpers/settled.js";

/**
 * MONITOR on a plain socket (ioredis's monitor mode can take the first lines of a busy server
 * for command replies and throw): calls `onCommand` with each command's client and arguments.
 */
async function watchCommands(url: string, sockets: Socket[], onCommand: (source: string, args: string[]) => void): Promise<void> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  sockets.push(socket);
  let buffer = "";
  let started: () => void;
  const ready = new Promise<void>((resolve) => (started = resolve));
  socket.setEncoding("utf8").on("data", (chunk: string) => {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf("\r\n")) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (line === "+OK") started();
      const match = /^\+[\d.]+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
      if (!match) continue;
      const args = [...match[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((arg) => unquote(arg[1]!));
      onCommand(match[1]!, args);
    }
  });
  socket.write("MONITOR\r\n");
  await ready;
}

/** MONITOR quotes arguments as sdscatrepr does: \n \r \t \a \b, \xHH, and a backslash before \\ and ". */
const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", a: "\x07", b: "\b" };
const unquote = (quoted: string) =>
  quoted.replace(/\\(x[0-9a-f]{2}|.)/g, (_, code: string) => (code.length === 3 ? String.fromCharCode(parseInt(code.slice(1), 16)) : ESCAPES[code] ?? code));

describe("Redis round trips", () => {
  let llm: FakeLlm | undefined;
  let pipeline: Pipeline | undefined;
  const connections: Redis[] = [];
  const sockets: Socket[] = [];
  afterEach(async () => {
    await pipeline?.close();
    await llm?.close();
    for (const connection of connections.splice(0)) connection.disconnect();
    for (const socket of sockets.splice(0)) socket.destroy();
    pipeline = llm = undefined;
  });

  it("the ingress stores a message, lists its session and enqueues its turn in one round trip, message first", async () => {
    const config = testConfig();
    const redis = createRedis(config.REDIS_URL!);
    connections.push(redis);
    const store = new SessionStore(redis, config.REDIS_PREFIX);
    const producers = createProducers(redis, config.REDIS_PREFIX);
    const ingress = new Ingress({
      store, producers, redis, prefix: config.REDIS_PREFIX,
      access: new AccessControl(redis, config.REDIS_PREFIX, accessListsFrom(config)),
      maxMessageChars: config.MAX_MESSAGE_CHARS, rateLimitPerMinute: 0, logger: silentLogger,
    });
    try {
      // The first add of a queue reads its settings once; measure a later one.
      await ingress.submit(inbound({ text: "warm-up", messageId: "rt0" }));
      const trips = countRoundTrips(redis);
      expect(await ingress.submit(inbound({ text: "hello", messageId: "rt1" }))).toEqual({ status: "accepted" });
      expect(trips.sent.map((entry) => entry.name)).toEqual(["evalsha", "sadd", "evalsha"]);
      expect(trips.roundTrips()).toBe(1);

      // Redis ran them in the order sent: the job exists and the message was stored before it.
      const session = store.keys(inbound({ text: "" }).sessionKey);
      expect((await redis.lrange(session.inbox, 0, -1)).map((raw) => (JSON.parse(raw) as { text: string }).text)).toEqual(["warm-up", "hello"]);
      expect(await producers.turnQueue.getJobCountByTypes("waiting", "active")).toBe(1);

      // A duplicate is stored once and still enqueues, in one round trip too.
      trips.reset();
      expect(await ingress.submit(inbound({ text: "hello", messageId: "rt1" }))).toEqual({ status: "duplicate" });
      expect(trips.roundTrips()).toBe(1);
      expect(await redis.llen(session.inbox)).toBe(2);
    } finally {
      await producers.close();
    }
  });

  it("a platform message of a paired user asks access and the rate counter in one round trip, then stores and enqueues in one", async () => {
    const config = testConfig();
    const redis = createRedis(config.REDIS_URL!);
    connections.push(redis);
    const store = new SessionStore(redis, config.REDIS_PREFIX);
    const producers = createProducers(redis, config.REDIS_PREFIX);
    const access = new AccessControl(redis, config.REDIS_PREFIX, accessListsFrom(config));
    const ingress = new Ingress({
      store, producers, redis, prefix: config.REDIS_PREFIX, access,
      maxMessageChars: config.MAX_MESSAGE_CHARS, rateLimitPerMinute: 3, logger: silentLogger,
    });
    const fromUser = (messageId: string) => inbound({ platform: "telegram", chatId: "42", userId: "42", text: "hi", messageId });
    try {
      // Not on any allowlist: refused with a pairing code, which the operator approves.
      expect(await ingress.submit(fromUser("tg0"))).toMatchObject({ status: "denied" });
      const [request] = await access.pendingRequests();
      expect(await access.approve(request!.code)).toMatchObject({ userId: "42" });
      expect(await ingress.submit(fromUser("tg1"))).toEqual({ status: "accepted" });

      const trips = countRoundTrips(redis);
      expect(await ingress.submit(fromUser("tg2"))).toEqual({ status: "accepted" });
      const names = trips.sent.map((entry) => entry.name);
      expect(names, JSON.stringify(trips.sent)).toEqual(["sismember", "multi", "incr", "expire", "exec", "evalsha", "sadd", "evalsha"]);
      expect(trips.roundTrips()).toBe(2);
      // The first round trip asks, the second stores: nothing is stored before the verdict.
      expect(trips.sent.slice(0, 5).every((entry) => entry.answeredBefore === trips.sent[0]!.answeredBefore)).toBe(true);

      // The limit still holds: the denied message counted too, so the fourth of the minute is refused.
      trips.reset();
      expect(await ingress.submit(fromUser("tg3"))).toMatchObject({ status: "rate-limited" });
      expect(trips.roundTrips()).toBe(1);
      expect(await redis.llen(store.keys(fromUser("x").sessionKey).inbox)).toBe(2);
    } finally {
      await producers.close();
    }
  });

  /**
   * The whole pipeline in this process (gateway and worker) and one console chat: `ask` sends
   * the next question and waits for its answer.
   */
  const startChat = async () => {
    llm = await startFakeLlm();
    const adapter = new RecordingAdapter("console");
    const config = testConfig({ LLM_BASE_URL: llm.url });
    pipeline = await startPipeline(config, [adapter]);
    const admin = new Redis(config.REDIS_URL!);
    connections.push(admin);
    let turn = 0;
    const ask = async () => {
      turn++;
      const before = adapter.sent.length;
      await adapter.submit(inbound({ text: `question ${turn}`, messageId: `q${turn}` }));
      await adapter.waitFor((sent) => sent.length > before);
    };
    return { config, admin, ask };
  };

  it("one turn sends a bounded number of commands on the gateway's and the worker's own connections", async () => {
    const { config, admin, ask } = await startChat();
    // Warm-up: the first turn of a session, and the first add of each queue, do one-off reads.
    await ask();
    await ask();

    const clients = await admin.client("LIST") as string;
    const named = new Map<string, string>();
    for (const line of clients.split("\n")) {
      const name = /\bname=(\S+)/.exec(line)?.[1];
      const addr = /\baddr=(\S+)/.exec(line)?.[1];
      if (name && addr && (name === CONNECTION_NAMES.gateway || name === CONNECTION_NAMES.worker)) named.set(addr, name);
    }
    expect(new Set(named.values())).toEqual(new Set([CONNECTION_NAMES.gateway, CONNECTION_NAMES.worker]));

    // Commands on those connections during one turn (other test files share this Redis: only
    // this test's prefix counts), but not a lease heartbeat (one per 250 ms of turn: a matter
    // of time, not of work) nor the sweeper (every 5 s, on its own schedule).
    const heartbeat = sha(HEARTBEAT);
    const lines: string[] = [];
    await watchCommands(config.REDIS_URL!, sockets, (source, args) => {
      const role = named.get(source);
      // A turn's first heartbeat may find the script not yet loaded (turns before it ended within
      // 250 ms): its NOSCRIPT is answered by an EVAL with the script's text, the same heartbeat.
      const isHeartbeat = (args[0] === "evalsha" && args[1] === heartbeat) || (args[0] === "eval" && args[1] === HEARTBEAT);
      if (role && args.some((arg) => arg.includes(config.REDIS_PREFIX)) && !isHeartbeat) lines.push(`${role} ${args.slice(0, 4).join(" ")}`);
    });
    for (let attempt = 0; ; attempt++) {
      lines.length = 0;
      await ask();
      // The turn's last commands (settling the session after delivery) land after the reply.
      await settled(() => lines.length, 300);
      if (!lines.some((line) => / smembers /.test(`${line} `)) || attempt === 3) break;
    }
    const jobAdds = lines.filter((line) => line.endsWith(`:${TURN_QUEUE}:wait`) || line.endsWith(`:${deliveryQueueName("console")}:wait`));
    const report = `\n${lines.join("\n")}`;
    // One turn job (ingress), one delivery job (worker).
    expect(jobAdds, report).toHaveLength(2);
    // Counted on this code: ingress 3 (one round trip, above), worker 4 (begin, budget settle,
    // commit, delivery job; no reserve: the worker knows these accounts have no limit,
    // src/budget/limits-cache.ts; the vision flag only for a turn with pictures; no typing events
    // for a turn quicker than TYPING_DELAY_MS), delivery 3 (begin, the work list's SREM with the
    // finish: a reply's last part is recorded by its finish, so a one-part reply records none). A
    // new command on the turn path has to be worth it: raise the bound only with a reason.
    // Plus the console's turn history (issue 34, src/session/turn-history.ts): one pipelined
    // round trip after the commit — the entry (RPUSH, LTRIM) and the day's usage ledger (an
    // HINCRBY per chat, model and user, EXPIRE); priced models add their HINCRBYFLOATs.
    const history = lines.filter((line) => line.includes(":turn-history") || line.includes("{usage}:d:"));
    expect(history.length, report).toBeLessThanOrEqual(6);
    expect(lines.length - history.length, report).toBeLessThanOrEqual(10);
    expect(lines.filter((line) => / publish /.test(`${line} `)), report).toEqual([]);
    // The budget's limits are read inside its reserve script, not before it.
    expect(lines.filter((line) => / hgetall .*\{budget\}:limits:/.test(line)), report).toEqual([]);
    // The session's settling rides on the last finish: no separate look at its work.
    expect(lines.filter((line) => / srem /.test(`${line} `)), report).toHaveLength(1);
    // Ingress: the append and the turn job; delivery: begin, finish (no part record).
    expect(lines.filter((line) => line.startsWith(`${CONNECTION_NAMES.gateway} `) && / evalsha /.test(line)), report).toHaveLength(4);
    expect(lines.filter((line) => line.includes(sha(RECORD_PART))), report).toEqual([]);
    expect(lines.filter((line) => line.includes(":vision:")), report).toEqual([]);
  });
  it("the worker sends the delivery job with the commit, and the gateway settles the session with the last finish, each in one round trip", async () => {
    const trace = traceNamedConnections([CONNECTION_NAMES.gateway, CONNECTION_NAMES.worker]);
    try {
      const { config, admin, ask } = await startChat();
      const work = globalKeys(config.REDIS_PREFIX).workSet;
      // The settle lands after the reply went out.
      const settledAfter = async () => vi.waitFor(async () => expect(await admin.sismember(work, "console:chat-1")).toBe(0));
      await ask();
      await settledAfter();
      trace.reset();
      await ask();
      await settledAfter();

      const worker = trace.sent(CONNECTION_NAMES.worker);
      const commit = worker.findIndex((entry) => runs(entry, END_TURN));
      const deliveryAdd = worker.findIndex((entry) => entry.args.some((arg) => arg.endsWith(`:${deliveryQueueName("console")}:wait`)));
      const report = JSON.stringify(worker.map((entry) => [entry.name, entry.answeredBefore]));
      expect(commit, report).toBeGreaterThanOrEqual(0);
      // Sent after the commit (Redis runs it after), before the commit's answer came back.
      expect(deliveryAdd, report).toBe(commit + 1);
      expect(worker[deliveryAdd]!.answeredBefore, report).toBe(worker[commit]!.answeredBefore);
      // And no second delivery job after the commit.
      expect(worker.filter((entry) => entry.args.some((arg) => arg.includes(deliveryQueueName("console")))), report).toHaveLength(1);

      const gateway = trace.sent(CONNECTION_NAMES.gateway);
      const gatewayReport = JSON.stringify(gateway.map((entry) => [entry.name, entry.args[0], entry.answeredBefore]));
      const srem = gateway.findIndex((entry) => entry.name === "srem");
      const finish = gateway.findIndex((entry) => runs(entry, FINISH_REPLY));
      expect(finish, gatewayReport).toBe(srem + 1);
      expect(gateway[finish]!.answeredBefore, gatewayReport).toBe(gateway[srem]!.answeredBefore);
      expect(gateway.some((entry) => runs(entry, SESSION_WORK)), gatewayReport).toBe(false);
    } finally {
      trace.restore();
    }
  });
});
