import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import { queuePrefix } from "./jobs.js";
import { keySlot } from "./key-slot.js";

/** One sentinel or node address. */
export interface HostPort {
  host: string;
  port: number;
}

/**
 * A Redis master found through Redis Sentinel: connections ask the sentinels for the master's
 * address, and reconnect to the new one when the sentinels fail over (`failoverDetector`).
 */
export interface SentinelAddress {
  kind: "sentinel";
  sentinels: readonly HostPort[];
  /** The name in the sentinels' `sentinel monitor NAME host port quorum`. */
  master: string;
  /** The sentinels' own requirepass. */
  sentinelPassword?: string;
  /** The data nodes' AUTH (from REDIS_URL's userinfo when it is set beside the sentinels). */
  username?: string;
  password?: string;
}

/**
 * A Redis Cluster: connections learn the slot map from any node they reach (`nodes` are seeds,
 * not necessarily every node), follow MOVED/ASK redirections and failovers, and send each command
 * to the master of its key's slot. Every script and transaction of ours touches one slot (a
 * session's keys share its `{sessionKey}` tag); BullMQ's queues get one tag each (`queuePrefix`).
 */
export interface ClusterAddress {
  kind: "cluster";
  nodes: readonly HostPort[];
  /** The nodes' AUTH (from REDIS_URL's userinfo when it is set beside the nodes). */
  username?: string;
  password?: string;
  /** TLS to every node (REDIS_URL with rediss://). */
  tls?: boolean;
}

/** Where Redis is: a `redis://` or `rediss://` URL, a Sentinel-managed master, or a Cluster. */
export type RedisAddress = string | SentinelAddress | ClusterAddress;

/** Parses `host:port,host:port,…` (IPv6 hosts in brackets). */
export function parseHostPorts(list: string): HostPort[] {
  return list.split(",").map((item) => item.trim()).filter((item) => item.length > 0).map((item) => {
    const at = item.lastIndexOf(":");
    const host = item.slice(0, at).replace(/^\[(.*)\]$/, "$1");
    const port = Number(item.slice(at + 1));
    if (at <= 0 || !Number.isInteger(port) || port <= 0 || port > 65_535) throw new Error(`not a host:port: ${item}`);
    return { host, port };
  });
}

/** Where an address points, for messages and logs: never a password. */
export function describeRedisAddress(address: RedisAddress): string {
  if (typeof address !== "string" && address.kind === "cluster") return `cluster via ${address.nodes.map(({ host, port }) => `${host.includes(":") ? `[${host}]` : host}:${port}`).join(",")}`;
  if (typeof address !== "string") return `sentinel master "${address.master}" via ${address.sentinels.map(({ host, port }) => `${host.includes(":") ? `[${host}]` : host}:${port}`).join(",")}`;
  try {
    return new URL(address).host;
  } catch {
    return "(invalid URL)";
  }
}

/**
 * One ioredis connection: the one place connections are made (BullMQ's own are duplicates of
 * these, so they follow a Sentinel failover too). `maxRetriesPerRequest: null` makes commands
 * wait for a reconnect instead of failing while Redis restarts or fails over (BullMQ workers
 * require it anyway), so a Redis restart delays turns and ingress but loses nothing.
 */
export function createRedis(address: RedisAddress, options: RedisOptions = {}): Redis {
  const common: RedisOptions = {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    // Reconnect quickly at first, then every 2 s while Redis is down.
    retryStrategy: (attempt) => Math.min(100 * attempt, 2_000),
  };
  if (typeof address === "string") return new Redis(address, { ...common, ...options });
  if (address.kind === "cluster") return createCluster(address, { ...common, ...options });
  const client = new Redis({
    ...common,
    sentinels: address.sentinels.map(({ host, port }) => ({ host, port })),
    name: address.master,
    role: "master",
    ...(address.sentinelPassword ? { sentinelPassword: address.sentinelPassword } : {}),
    ...(address.username ? { username: address.username } : {}),
    ...(address.password ? { password: address.password } : {}),
    // All sentinels unreachable: ask again, as the retry strategy does for one server.
    sentinelRetryStrategy: (attempt) => Math.min(100 * attempt, 2_000),
    // A frozen master (SIGSTOP, a hung host) keeps its TCP connections open: without this the
    // connection would wait on it forever after the sentinels elected another master.
    failoverDetector: true,
    // …by closing the socket; a frozen master never answers the close, so it is destroyed at
    // once rather than after ioredis' 2 s, before the old master can wake and run what was
    // queued to it (writes a stale master takes are lost when it becomes a replica).
    disconnectTimeout: 100,
    // A node that turned replica under us (a demoted master, or a replica not yet promoted when
    // we reached it) answers writes with READONLY: reconnect through the sentinels and resend.
    reconnectOnError: (error) => (error.message.startsWith("READONLY") ? 2 : false),
    ...options,
  });
  return client.options.failoverDetector ? reviveAfterFailover(client) : client;
}

/**
 * Options a caller gives for one connection that a Cluster takes at its own level rather than
 * per node (ioredis ClusterOptions); the rest go to every node's connection.
 */
const CLUSTER_LEVEL = ["lazyConnect", "enableOfflineQueue", "enableReadyCheck", "maxRetriesPerRequest", "retryStrategy", "scripts"] as const;

/**
 * A Cluster client typed as a Redis: ioredis' Cluster has the same commands, MULTI, pipelines,
 * scripts, pub/sub and `duplicate()` (BullMQ uses it for its blocking connections), so every
 * room keeps one connection type. What differs is what a node answers for itself (INFO, CONFIG,
 * DBSIZE, SCAN): code that needs every node asks `clusterMasters` (the doctor, the admin tools).
 */
function createCluster(address: ClusterAddress, options: RedisOptions): Redis {
  const perNode: RedisOptions = { ...options };
  for (const key of CLUSTER_LEVEL) delete perNode[key];
  const retry = options.retryStrategy;
  const clusterOptions: ClusterOptions = {
    redisOptions: {
      ...perNode,
      ...(address.username ? { username: address.username } : {}),
      ...(address.password ? { password: address.password } : {}),
      ...(address.tls ? { tls: {} } : {}),
      // BullMQ reads maxRetriesPerRequest from the nodes' options of a Cluster.
      maxRetriesPerRequest: options.maxRetriesPerRequest ?? null,
    },
    ...(options.lazyConnect !== undefined ? { lazyConnect: options.lazyConnect } : {}),
    ...(options.enableOfflineQueue !== undefined ? { enableOfflineQueue: options.enableOfflineQueue } : {}),
    enableReadyCheck: options.enableReadyCheck ?? true,
    // Seeds unreachable: try again as a single connection would (null gives up, as for the doctor).
    clusterRetryStrategy: (attempt) => (retry ? retry(attempt) ?? null : Math.min(100 * attempt, 2_000)),
    // A slot moving (resharding) or its master failing over: wait and resend, as a single
    // connection waits for a restart. 16 redirections usually cover a failover's few seconds, but
    // not always: while the other nodes still name the dead master they can run out at once (seen
    // in the Cluster activity test, 2026-12-07) — the command fails, and its caller's retry takes
    // over (the ingress: the platform's; a job: BullMQ's).
    maxRedirections: 16,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 200,
    retryDelayOnMoved: 0,
    // Every command to the slot's master: replicas may lag, and our reads decide writes.
    scaleReads: "master",
    // Keep the slot map fresh without waiting for a redirection (a failover elsewhere).
    slotsRefreshInterval: 5_000,
    slotsRefreshTimeout: 2_000,
  };
  return connectSettles(new Cluster(address.nodes.map(({ host, port }) => ({ host, port })), clusterOptions)) as unknown as Redis;
}

/**
 * ioredis' `Cluster#connect()` never settles when its ready check fails — CLUSTER INFO answering
 * `cluster_state:fail`, as it does mid-failover: the client disconnects and connects again on its
 * own timer with a new `connect()`, and the first promise is dropped (ioredis issue 709). BullMQ
 * awaits that promise when its watchdog resets a worker's blocking connection (a BZPOPMIN that
 * outlived its timeout, as one sent to a failing master does): the worker's fetch loop then
 * waited forever, so it took no job again and `Worker.close()` never resolved (the cluster
 * failover test's cleanup, past 60 and 180 s). Here `connect()` also settles when the client
 * itself gets there: resolved once it is ready, rejected once it ended (closed for good). The
 * same for its duplicates, which BullMQ's blocking connections are.
 */
function connectSettles(cluster: Cluster): Cluster {
  readyCheckAnswers(cluster, READY_CHECK_TIMEOUT_MS);
  const connect = cluster.connect.bind(cluster);
  const duplicate = cluster.duplicate.bind(cluster);
  cluster.connect = () => new Promise<void>((resolve, reject) => {
    // Events are emitted a tick after the status changes: one left over from before this call
    // (the `end` of the disconnect that preceded it) is told apart by the status now.
    const onReady = () => {
      if (cluster.status !== "ready") return;
      stop();
      resolve();
    };
    const onEnd = () => {
      if (cluster.status !== "end") return;
      stop();
      reject(new Error("Connection is closed."));
    };
    const stop = () => {
      cluster.off("ready", onReady);
      cluster.off("end", onEnd);
    };
    cluster.on("ready", onReady);
    cluster.on("end", onEnd);
    connect().then(() => {
      stop();
      resolve();
    }, (error: unknown) => {
      stop();
      reject(error instanceof Error ? error : new Error(String(error)));
    });
  });
  // Closed between two attempts of such a reconnect (no node connection left), a Cluster stays
  // `disconnecting` for good and never emits `end`: what BullMQ's close waits for, and what
  // rejects the commands still queued. ioredis ends a client it closes before its first connect
  // this way; the same for one with nothing left to close.
  const disconnect = cluster.disconnect.bind(cluster);
  const internals = cluster as unknown as { setStatus?: (status: string) => void; handleCloseEvent?: () => void };
  cluster.disconnect = (reconnect = false) => {
    // With node connections, their `end`s end the client; a client never connected ioredis ends.
    const nothingToClose = cluster.nodes().length === 0 && cluster.status !== "wait";
    disconnect(reconnect);
    if (reconnect || !nothingToClose) return;
    // A turn later, and only if nobody connected it again meanwhile: BullMQ's cluster recovery
    // calls disconnect() and connect() back to back, and a `close` emitted under that new
    // connect() would end it.
    setImmediate(() => {
      if (cluster.status !== "disconnecting" || cluster.nodes().length > 0) return;
      if (typeof internals.setStatus !== "function" || typeof internals.handleCloseEvent !== "function") return;
      internals.setStatus("close");
      internals.handleCloseEvent();
    });
  };
  cluster.duplicate = (...args: Parameters<Cluster["duplicate"]>) => connectSettles(duplicate(...args));
  return cluster;
}

/** As long as ioredis gives a CLUSTER SLOTS read (`slotsRefreshTimeout` above). */
const READY_CHECK_TIMEOUT_MS = 2_000;

/**
 * ioredis' Cluster ready check (CLUSTER INFO, after the slot map is read) goes to a random master
 * and waits for its answer with no timeout. A master frozen (SIGSTOP, a hung host) and not yet
 * failed over when the map was read never answers, and keeps its TCP connection open: the client
 * stayed `connect` for as long as that master hung — 3, 5 and 6 of 12 clients started within 0.6 s
 * of a master's SIGSTOP were not ready 20–30 s later, their failover long done
 * (cluster-connect.test.ts). A BullMQ worker whose blocking connection is such a client takes no
 * job. Here an unanswered ready check fails after `timeoutMs`, as a `cluster_state:fail` answer
 * does: ioredis reconnects and reads the slot map again, which names the promoted replica once
 * the failover is through.
 */
function readyCheckAnswers(cluster: Cluster, timeoutMs: number): void {
  const internals = cluster as unknown as { readyCheck?: (callback: (error?: Error | null, state?: string) => void) => void };
  const readyCheck = internals.readyCheck?.bind(cluster);
  if (typeof readyCheck !== "function") return;
  internals.readyCheck = (callback) => {
    let answered = false;
    const answer = (error?: Error | null, state?: string) => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      callback(error, state);
    };
    const timer = setTimeout(() => answer(new Error(`cluster ready check unanswered after ${timeoutMs} ms`)), timeoutMs);
    readyCheck(answer);
  };
}

/** Whether a connection is a Cluster client (ioredis sets `isCluster` on both kinds). */
export function isCluster(redis: Redis): boolean {
  return (redis as { isCluster?: boolean }).isCluster === true;
}

/** BullMQ's prefix for `queue` on this connection (a hash tag per queue on a Cluster). */
export function queuePrefixOf(connection: Redis, prefix: string, queue: string): string {
  return queuePrefix(prefix, queue, isCluster(connection));
}

/**
 * The masters of a Cluster, each as its own connection (for what a node answers only for
 * itself: INFO, CONFIG GET, DBSIZE, SCAN); a single Redis is its own one master.
 */
export function clusterMasters(redis: Redis): Redis[] {
  if (!isCluster(redis)) return [redis];
  return (redis as unknown as Cluster).nodes("master") as Redis[];
}

/** The connection that carries commands for `key`: the slot's master on a Cluster, else the connection itself. */
function connectionFor(redis: Redis, key: string): Redis | undefined {
  if (!isCluster(redis)) return redis;
  const cluster = redis as unknown as Cluster;
  const nodeKey = cluster.slots[keySlot(key)]?.[0];
  return nodeKey === undefined ? undefined : cluster.nodes("master").find((node) => `${node.options.host}:${node.options.port}` === nodeKey);
}

/**
 * How many replicas hold what is about to be written to `keys` (WAIT on the very connection the
 * writes go out on). Made before the writes: `count` answers 0 — "not confirmed" — unless every
 * key's commands went to the same node over the same socket as WAIT did afterwards. A WAIT
 * answered by another socket (a reconnect after a failover resends it to the new master, which
 * never saw the writes and so has nothing to wait for) would confirm what no replica holds.
 * On a Cluster each key's node is asked (a WAIT per node, in parallel); the least count wins.
 */
export async function replicaCounter(redis: Redis, keys: readonly string[]): Promise<{ count(wanted: number, timeoutMs: number): Promise<number> }> {
  // A Cluster connects to a node on its first command: connect now, so the socket is known.
  await Promise.all(keys.map((key) => connectionFor(redis, key)).map((target) => (target?.status === "wait" ? target.connect().catch(() => undefined) : undefined)));
  const targets = keys.map((key) => connectionFor(redis, key));
  const sockets = targets.map((target) => target?.stream);
  const ready = targets.every((target) => target?.status === "ready");
  return {
    async count(wanted, timeoutMs) {
      if (!ready) return 0;
      const distinct = [...new Set(targets)] as Redis[];
      // A master demoted under the writes answers WAIT with an error ("cannot be used with
      // replica instances"): nothing confirmed, as when too few replicas answer.
      const counts = await Promise.all(distinct.map((target) => target.wait(wanted, timeoutMs).catch(() => 0)));
      const unchanged = keys.every((key, index) => connectionFor(redis, key) === targets[index] && targets[index]?.stream === sockets[index]);
      return unchanged ? Math.min(...counts) : 0;
    },
  };
}

/**
 * A read's confirmation (session/work-list.ts, ReadConfirmer): true when `wanted` replicas follow
 * the master that answered the read, asked with WAIT on the read's own socket afterwards. A
 * stale master (frozen past its failover, then woken) has none, and a demoted one refuses WAIT.
 * A short wait: an unconfirmed read only keeps a session listed for the next sweep, and the
 * sweeper settles one session after another (a replica down must not slow it 3 s a session).
 */
export function readConfirmer(redis: Redis, wanted: number, timeoutMs = 500): (key: string) => Promise<() => Promise<boolean>> {
  return async (key) => {
    const counter = await replicaCounter(redis, [key]);
    return async () => (await counter.count(wanted, timeoutMs)) >= wanted;
  };
}

/**
 * ioredis gives up a sentinel connection for good ("Connection is closed.", status `end`) when
 * its failover detector fires while the connection is already re-resolving the master — what a
 * master killed mid-traffic produces, often on a loaded machine (seen on the failover test). A
 * connection nobody closed is connected again (the commands it failed were failed to their
 * callers, who retry); so are its duplicates, BullMQ's blocking connections among them.
 */
function reviveAfterFailover(client: Redis): Redis {
  let closing = false;
  const quit = client.quit.bind(client);
  const disconnect = client.disconnect.bind(client);
  const duplicate = client.duplicate.bind(client);
  client.quit = ((...args: Parameters<Redis["quit"]>) => {
    closing = true;
    return quit(...args);
  }) as Redis["quit"];
  client.disconnect = (reconnect = false) => {
    if (!reconnect) closing = true;
    disconnect(reconnect);
  };
  client.duplicate = (override) => reviveAfterFailover(duplicate(override));
  client.on("end", () => {
    if (!closing) client.connect().catch(() => undefined);
  });
  return client;
}

export type { Redis };

/**
 * CLIENT SETNAME of the connections that carry a role's own commands (session scripts, job
 * adds, events); BullMQ's workers use connections of their own.
 */
export const CONNECTION_NAMES = {
  gateway: "longhaul-gateway",
  gatewayEvents: "longhaul-gateway-events",
  worker: "longhaul-worker",
  /** The worker's subscriber: budget limit changes (src/budget/limits-cache.ts). */
  workerEvents: "longhaul-worker-events",
  /** The web console's reads and actions (src/web). */
  console: "longhaul-console",
} as const;

/**
 * Whether Redis answers within `timeoutMs`. Commands wait for a reconnect instead of failing
 * (see above), so a plain PING would hang for as long as Redis is down.
 */
export async function pingWithin(redis: Redis, timeoutMs = 1_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([redis.ping().then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
