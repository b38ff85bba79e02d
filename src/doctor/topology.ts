/**
 * Topology checks (`npm run doctor` with REDIS_SENTINELS): the sentinels answer and agree on
 * the master, and the master has the replicas the ingress waits for (REDIS_MIN_REPLICAS_ACK,
 * docs/decisions.md). The master's own durability (AOF, noeviction) is judged by redis.ts on
 * the connection the sentinels led to.
 */
import { createRedis, type Redis, type SentinelAddress } from "../queue/index.js";
import { describeNetworkError, fail, ok, warn, type CheckResult } from "./check.js";

interface SentinelAnswer {
  sentinel: string;
  /** host:port of the master, null when the sentinel does not monitor that name. */
  master?: string | null;
  error?: string;
}

async function askSentinel(host: string, port: number, address: SentinelAddress, timeoutMs: number): Promise<SentinelAnswer> {
  const sentinel = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  const auth = address.sentinelPassword ? `:${encodeURIComponent(address.sentinelPassword)}@` : "";
  const client = createRedis(`redis://${auth}${sentinel}`, {
    lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: timeoutMs, commandTimeout: timeoutMs, enableOfflineQueue: false,
  });
  let reason: unknown;
  client.on("error", (error) => (reason ??= error));
  try {
    await client.connect();
    const reply = (await client.call("SENTINEL", "get-master-addr-by-name", address.master)) as [string, string] | null;
    return { sentinel, master: reply ? `${reply[0]}:${reply[1]}` : null };
  } catch (error) {
    const cause = reason ?? error;
    return { sentinel, error: cause instanceof Error && /NOAUTH|WRONGPASS|invalid password/i.test(cause.message) ? "refused the password" : describeNetworkError(cause) };
  } finally {
    client.disconnect();
  }
}

/** What the sentinels say about the master: reachable, monitoring it, agreeing. */
export async function sentinelResults(address: SentinelAddress, timeoutMs: number): Promise<CheckResult[]> {
  const answers = await Promise.all(address.sentinels.map(({ host, port }) => askSentinel(host, port, address, timeoutMs)));
  const results: CheckResult[] = [];
  const unreachable = answers.filter((answer) => answer.error !== undefined);
  const unaware = answers.filter((answer) => answer.master === null);
  const masters = new Set(answers.flatMap((answer) => (typeof answer.master === "string" ? [answer.master] : [])));
  if (unreachable.length === answers.length) {
    return [fail("redis", `no sentinel answered (${unreachable.map((answer) => `${answer.sentinel}: ${answer.error}`).join("; ")})`,
      "start the sentinels, or correct REDIS_SENTINELS (and REDIS_SENTINEL_PASSWORD)")];
  }
  if (unreachable.length > 0) {
    results.push(warn("redis", `${unreachable.length} of ${answers.length} sentinels did not answer (${unreachable.map((answer) => `${answer.sentinel}: ${answer.error}`).join("; ")}): a failover needs a majority of them`,
      "start them again, or remove them from REDIS_SENTINELS"));
  }
  if (unaware.length > 0) {
    results.push(fail("redis", `${unaware.map((answer) => answer.sentinel).join(", ")} monitor no master named "${address.master}"`,
      "set REDIS_SENTINEL_MASTER to the NAME of their `sentinel monitor NAME host port quorum`"));
  }
  if (masters.size > 1) {
    results.push(fail("redis", `the sentinels disagree on the master of "${address.master}": ${answers.filter((answer) => answer.master).map((answer) => `${answer.sentinel} says ${answer.master}`).join(", ")}`,
      "wait for the failover to settle; if it persists, check that the sentinels see each other (same network, same master name)"));
  } else if (masters.size === 1) {
    const answering = answers.length - unreachable.length - unaware.length;
    results.push(ok("redis", `${answering} of ${answers.length} sentinels agree: master "${address.master}" is ${[...masters][0]}`));
  }
  return results;
}

/** The master's replicas against what the ingress waits for. */
export async function replicaResult(master: Redis, minReplicasAck: number): Promise<CheckResult> {
  const info = await master.info("replication");
  if (!/^role:master/m.test(info)) return fail("redis", "the node the sentinels name as master is not a master (a failover in progress?)", "run the doctor again in a few seconds");
  const online = info.split(/\r?\n/).filter((line) => /^slave\d+:.*state=online/.test(line)).length;
  if (online < minReplicasAck) {
    return fail("redis", `${online} replica${online === 1 ? "" : "s"} online, fewer than REDIS_MIN_REPLICAS_ACK=${minReplicasAck}: the ingress would acknowledge no message`,
      "start the replicas (replicaof the master), or lower REDIS_MIN_REPLICAS_ACK");
  }
  if (online === 0) return warn("redis", "no replica online: a failover has nothing to promote", "run two replicas or more");
  if (minReplicasAck > 0 && online === minReplicasAck) {
    return warn("redis", `${online} replica${online === 1 ? "" : "s"} online, exactly REDIS_MIN_REPLICAS_ACK=${minReplicasAck}: after a failover the ingress refuses messages until the old master is back`,
      "run one replica more than REDIS_MIN_REPLICAS_ACK");
  }
  return ok("redis", `${online} replicas online; the ingress waits for ${minReplicasAck} to confirm each message`);
}

function infoField(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)$`, "m").exec(info)?.[1]?.trim();
}

/**
 * A Cluster's shape (`npm run doctor` with REDIS_CLUSTER_NODES): every slot covered and served,
 * the state ok, and how many masters and replicas answer. Each master's durability (AOF,
 * noeviction) is judged by redis.ts, per master.
 */
export async function clusterResults(redis: Redis, minReplicasAck = 0): Promise<CheckResult[]> {
  const info = (await redis.call("CLUSTER", "INFO")) as string;
  const state = infoField(info, "cluster_state");
  const assigned = Number(infoField(info, "cluster_slots_assigned") ?? 0);
  const served = Number(infoField(info, "cluster_slots_ok") ?? 0);
  const masters = Number(infoField(info, "cluster_size") ?? 0);
  const nodes = Number(infoField(info, "cluster_known_nodes") ?? 0);
  if (state !== "ok" || assigned < 16_384) {
    return [fail("redis", `cluster state ${state ?? "unknown"}: ${assigned} of 16384 slots assigned, ${served} served — commands for the others fail`,
      "assign every slot (redis-cli --cluster fix HOST:PORT) and start the masters that are down")];
  }
  const results = [ok("redis", `cluster ok: 16384 slots served by ${masters} master${masters === 1 ? "" : "s"}, ${nodes} node${nodes === 1 ? "" : "s"} known`)];
  const replicas = nodes - masters;
  if (replicas < masters) {
    results.push(warn("redis", `${replicas} replica${replicas === 1 ? "" : "s"} for ${masters} masters: a master that dies without a replica takes its slots' sessions and queues with it until it is back`,
      "give every master a replica (redis-cli --cluster add-node NEW HOST:PORT --cluster-slave)"));
  } else if (minReplicasAck === 0) {
    results.push(warn("redis", "REDIS_MIN_REPLICAS_ACK=0 on a Cluster with replicas: replication is asynchronous, so a master failing over may lose messages already acknowledged to their platform",
      "set REDIS_MIN_REPLICAS_ACK=1 (each message then waits for a replica of every node it is written to)"));
  }
  return results;
}
