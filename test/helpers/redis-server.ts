/**
 * Starts a private redis-server for tests on a free port, with its data in a temp directory.
 * Fault tests stop and restart it (`restart()` keeps the port and the AOF, so data survives).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface RedisServerHandle {
  url: string;
  port: number;
  dir: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  restart(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered, keys' TTLs keep running. */
  pause(): void;
  /** Thaws a paused server (SIGCONT). */
  resume(): void;
  /** Pauses for `ms`, then resumes. */
  freeze(ms: number): Promise<void>;
  /** Stops the server and removes its data directory. */
  dispose(): Promise<void>;
  /** The running server's process id (to pause it with SIGSTOP / SIGCONT). */
  pid(): number | undefined;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

export function assertRedisServerInstalled(): void {
  const probe = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      "redis-server is not installed: the tests need a real Redis. Install Debian's package: apt-get install -y redis-server",
    );
  }
}

/**
 * A free port whose cluster bus port (port + 10000) is free too and exists: a cluster node on an
 * ephemeral port above 55535 cannot open its bus and exits at once.
 */
export async function freeClusterPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port + 10_000 > 65_535) continue;
    if (await portIsFree(port + 10_000)) return port;
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** The server process exited before it listened (its port was taken meanwhile, say). */
export class ServerExitedError extends Error {}

/**
 * Waits until a Redis server on `port` answers a PING (any reply: +PONG, -NOAUTH, -LOADING). With
 * `child`, gives up at once when the process exits (a port taken between freePort() and the
 * spawn) instead of waiting out the timeout. An accepted connection alone is not enough: a
 * cluster node binds its port before its bus port, and exits when that one is taken, so for a
 * moment it accepts connections it will never serve (seen at load 20: the wait took a dying node
 * for a listening one).
 */
export async function waitForPort(port: number, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && (child.exitCode !== null || child.signalCode !== null)) {
      throw new ServerExitedError(`redis-server on ${port} exited (${child.exitCode ?? child.signalCode}) before it listened`);
    }
    if (await answersPing(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`redis-server did not listen on ${port} within ${timeoutMs} ms`);
}

function answersPing(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const done = (answered: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answered);
    };
    // A server that accepted but never answers is dying (or not Redis): ask again after a while.
    const timer = setTimeout(() => done(false), 1_000);
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (chunk: Buffer) => done(chunk.length > 0 && (chunk[0] === 0x2b || chunk[0] === 0x2d)));
    socket.once("error", () => done(false));
    socket.once("close", () => done(false));
  });
}

export async function startRedisServer(options: { appendOnly?: boolean } = {}): Promise<RedisServerHandle> {
  assertRedisServerInstalled();
  let port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "longhaul-redis-"));
  let child: ChildProcess | undefined;

  const start = async () => {
    child = spawn(
      "redis-server",
      [
        "--port", String(port),
        "--bind", "127.0.0.1",
        "--dir", dir,
        "--save", "",
        "--appendonly", options.appendOnly ? "yes" : "no",
        "--appendfsync", "always",
        "--maxmemory-policy", "noeviction",
        "--protected-mode", "no",
      ],
      { stdio: "ignore" },
    );
    await waitForPort(port, 10_000, child);
  };

  const signal = (name: NodeJS.Signals) => {
    if (!child || child.exitCode !== null) throw new Error("redis-server is not running");
    child.kill(name);
  };

  const stop = async () => {
    const running = child;
    // A paused server would never see SIGTERM.
    if (running && running.exitCode === null) running.kill("SIGCONT");
    child = undefined;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once("exit", () => resolve());
      running.kill("SIGTERM");
    });
  };

  // Another process may take the free port before redis-server binds it: pick another (first start only;
  // a restart keeps its port, since clients hold its URL).
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (error) {
      if (!(error instanceof ServerExitedError) || attempt >= 5) throw error;
      port = await freePort();
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    start,
    stop,
    restart: async () => {
      await stop();
      await start();
    },
    pause: () => signal("SIGSTOP"),
    resume: () => signal("SIGCONT"),
    freeze: async (ms) => {
      signal("SIGSTOP");
      try {
        await new Promise((resolve) => setTimeout(resolve, ms));
      } finally {
        signal("SIGCONT");
      }
    },
    dispose: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    pid: () => child?.pid,
  };
}
