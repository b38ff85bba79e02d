/**
 * compose.yaml's `sentinel` profile, run as written: no Docker engine here, so the command line
 * of each service (redis, its two replicas, the three sentinels' shell script) is taken from the
 * file and run on this machine's redis-server, with only what Docker would provide swapped in —
 * the service names become 127.0.0.1, the fixed ports 6379/26379 free loopback ports, /data a
 * temporary directory. A directive Redis 7 does not know, a sentinel that cannot reach the
 * others or a replica that cannot follow fails here, and so does a setup that cannot fail over.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { formatResult } from "../../../src/doctor/check.js";
import { redisResults } from "../../../src/doctor/doctor.js";
import { testConfig } from "../../helpers/config.js";
import { assertRedisServerInstalled, freePort, waitForPort } from "../../helpers/redis-server.js";

interface Service {
  command?: string[] | string;
  profiles?: string[];
  environment?: Record<string, string>;
}

const compose = parse(readFileSync(new URL("../../../compose.yaml", import.meta.url), "utf8"), { merge: true }) as { services: Record<string, Service> };
const DATA_NODES = ["redis", "redis-replica-1", "redis-replica-2"] as const;
const SENTINELS = ["sentinel-1", "sentinel-2", "sentinel-3"] as const;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cli = (port: number, ...args: string[]) => spawnSync("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { encoding: "utf8", timeout: 5_000 }).stdout;

describe("compose.yaml's sentinel profile, its commands run on loopback", () => {
  const dir = mkdtempSync(join(tmpdir(), "longhaul-compose-sentinel-"));
  const ports = new Map<string, number>();
  const children = new Map<string, ChildProcess>();
  /** A service name as a host (Docker's DNS) → loopback; a fixed port → the service's own. */
  const hostArg = (arg: string) => (arg in Object.fromEntries([...DATA_NODES, ...SENTINELS].map((name) => [name, 1])) ? "127.0.0.1" : arg);

  const startData = async (name: string) => {
    const command = compose.services[name]!.command as string[];
    expect(command[0]).toBe("redis-server");
    const port = ports.get(name)!;
    const args = command.slice(1).map(hostArg).map((arg) => (arg === "6379" ? String(ports.get("redis")) : arg));
    const child = spawn("redis-server", [...args, "--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--dbfilename", `dump-${name}.rdb`, "--appenddirname", `aof-${name}`], { stdio: "ignore" });
    children.set(name, child);
    await waitForPort(port, 15_000, child);
  };
  const startSentinel = async (name: string) => {
    const service = compose.services[name]!;
    const command = service.command as string[];
    expect(command.slice(0, 2)).toEqual(["sh", "-c"]);
    // Compose turns `$$` into `$` before the shell sees the script.
    const script = command[2]!.replaceAll("$$", "$")
      .replaceAll("/data/sentinel.conf", join(dir, `${name}.conf`))
      .replace("'port 26379'", `'port ${ports.get(name)}'`)
      .replace(/sentinel monitor lh redis 6379 2/, `sentinel monitor lh 127.0.0.1 ${ports.get("redis")} 2`);
    expect(script).not.toMatch(/26379|\bredis 6379/);
    const child = spawn("sh", ["-c", script], { stdio: "ignore", cwd: dir, env: { ...process.env, ...service.environment, HOSTNAME_ANNOUNCE: "127.0.0.1" } });
    children.set(name, child);
    await waitForPort(ports.get(name)!, 15_000, child);
  };
  const sentinelList = () => SENTINELS.map((name) => `127.0.0.1:${ports.get(name)}`).join(",");
  const doctor = async () => (await redisResults(testConfig({ REDIS_URL: "redis://127.0.0.1:1", REDIS_SENTINELS: sentinelList(), REDIS_SENTINEL_MASTER: "lh" }), 5_000)).map((result) => formatResult(result, { color: false }));
  const masterOf = (name: string) => cli(ports.get(name)!, "SENTINEL", "get-master-addr-by-name", "lh").trim().split("\n").join(":");
  const waitFor = async (what: string, check: () => boolean, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
      await sleep(200);
    }
  };

  beforeAll(async () => {
    assertRedisServerInstalled();
    for (const name of [...DATA_NODES, ...SENTINELS]) ports.set(name, await freePort());
    for (const name of DATA_NODES) await startData(name);
    for (const name of SENTINELS) await startSentinel(name);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([...children.values()].map((child) => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    })));
    rmSync(dir, { recursive: true, force: true });
  });

  it("the profile holds exactly these services, each started only with it", () => {
    const inProfile = Object.entries(compose.services).filter(([, service]) => service.profiles?.includes("sentinel")).map(([name]) => name).sort();
    expect(inProfile).toEqual([...DATA_NODES.slice(1), ...SENTINELS].sort());
  });

  it("the sentinels find each other and the replicas, agree on the master, and the doctor is content", async () => {
    const master = `127.0.0.1:${ports.get("redis")}`;
    await waitFor("every sentinel to know two others and two replicas", () => SENTINELS.every((name) => {
      const fields = cli(ports.get(name)!, "SENTINEL", "master", "lh").trim().split("\n");
      const field = (key: string) => Number(fields[fields.indexOf(key) + 1]);
      return field("num-other-sentinels") === 2 && field("num-slaves") === 2;
    }), 30_000);
    for (const name of SENTINELS) expect(masterOf(name)).toBe(master);
    // Redis 7 batches a diskless first sync for 5 s (repl-diskless-sync-delay; compose keeps the default).
    await waitFor("both replicas to be online", () => (cli(ports.get("redis")!, "INFO", "replication").match(/state=online/g) ?? []).length === 2, 30_000);
    for (const name of DATA_NODES) {
      expect(cli(ports.get(name)!, "CONFIG", "GET", "appendonly")).toMatch(/appendonly\nyes/);
      expect(cli(ports.get(name)!, "CONFIG", "GET", "maxmemory-policy")).toMatch(/maxmemory-policy\nnoeviction/);
    }
    const lines = await doctor();
    expect(lines.filter((line) => !line.startsWith("ok"))).toEqual([]);
    expect(lines.join("\n")).toContain(`3 of 3 sentinels agree: master "lh" is ${master}`);
  }, 60_000);

  it("fails over when the master's host dies: the sentinels agree on a replica, which has the other as its replica", async () => {
    const former = `127.0.0.1:${ports.get("redis")}`;
    children.get("redis")!.kill("SIGKILL");
    await waitFor("the sentinels to agree on a new master", () => {
      const named = SENTINELS.map(masterOf);
      return named.every((each) => each === named[0] && each !== former && each !== "");
    }, 60_000);
    const promoted = Number(masterOf("sentinel-1").split(":")[1]);
    expect([ports.get("redis-replica-1"), ports.get("redis-replica-2")]).toContain(promoted);
    await waitFor("the other replica to follow the new master", () => /connected_slaves:1/.test(cli(promoted, "INFO", "replication")), 30_000);
    // Docker restarts the dead container with its command as written: the sentinels make it a replica.
    await startData("redis");
    await waitFor("the old master to rejoin as a replica", () => /connected_slaves:2/.test(cli(promoted, "INFO", "replication")), 60_000);
    expect(cli(ports.get("redis")!, "ROLE").split("\n")[0]).toBe("slave");
  }, 150_000);
});
