/**
 * A stdio transport for MCP servers that owns the server's whole process tree.
 *
 * The SDK's StdioClientTransport spawns the server as a plain child and its close() signals
 * only that child: a server started through `npx`, a shell or a wrapper leaves its real
 * process (and whatever that started) running. Here the server starts in a process group of
 * its own (`detached`: setsid on POSIX), and stopping it signals the group — every process the
 * server started, even after the direct child has exited. Messages are framed with the SDK's
 * own ReadBuffer / serializeMessage, so the wire format is the SDK's.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

export interface GroupStdioOptions {
  command: string;
  args: readonly string[];
  cwd?: string | undefined;
  /** Passed on besides the SDK's safe defaults (PATH, HOME, USER, SHELL, TERM, LOGNAME). */
  env: Readonly<Record<string, string>>;
  /** One line of the server's stderr. */
  onStderr(line: string): void;
  /** How long `close()` waits after closing stdin, and again after SIGTERM. @defaultValue 2000 */
  graceMs?: number;
}

/** Longest stderr line kept; the rest is cut (a server dumping a blob must not flood the log). */
const STDERR_LINE_MAX = 2_000;

export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #options: GroupStdioOptions;
  readonly #buffer = new ReadBuffer();
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #closing = false;

  constructor(options: GroupStdioOptions) {
    this.#options = options;
  }

  /** The server's pid, which is also its process group id. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  start(): Promise<void> {
    if (this.#child) throw new Error("GroupStdioTransport already started");
    return new Promise((resolve, reject) => {
      const child = spawn(this.#options.command, [...this.#options.args], {
        env: { ...getDefaultEnvironment(), ...this.#options.env },
        cwd: this.#options.cwd,
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
        shell: false,
      });
      this.#child = child;
      this.#exited = new Promise((done) => child.once("close", () => done()));
      child.once("error", (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.once("spawn", () => resolve());
      // Whatever the server left behind goes with it, also when it died on its own; a
      // grandchild holding stdout open would otherwise keep "close" from ever coming.
      child.once("exit", () => signalGroup(child.pid, "SIGKILL"));
      child.once("close", () => {
        this.#child = undefined;
        this.onclose?.();
      });
      child.stdin?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("data", (chunk: Buffer) => {
        this.#buffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.#buffer.readMessage();
          } catch (error) {
            this.onerror?.(error instanceof Error ? error : new Error(String(error)));
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      if (child.stderr) {
        createInterface({ input: child.stderr, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
          if (line.trim() !== "") this.#options.onStderr(line.length > STDERR_LINE_MAX ? `${line.slice(0, STDERR_LINE_MAX)}…` : line);
        });
      }
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || this.#closing) return Promise.reject(new Error("not connected"));
    return new Promise((resolve, reject) => {
      const written = stdin.write(serializeMessage(message), (error) => (error ? reject(error) : undefined));
      if (written) resolve();
      else stdin.once("drain", () => resolve());
    });
  }

  /** Closes stdin (the polite stop), then SIGTERM to the group, then SIGKILL; resolves once the server is gone. */
  async close(): Promise<void> {
    const child = this.#child;
    if (!child || this.#closing) return this.#exited;
    this.#closing = true;
    const grace = this.#options.graceMs ?? 2_000;
    const exitedWithin = (ms: number) => Promise.race([this.#exited.then(() => true), delay(ms).then(() => false)]);
    child.stdin?.end();
    if (!(await exitedWithin(grace))) {
      signalGroup(child.pid, "SIGTERM");
      if (!(await exitedWithin(grace))) signalGroup(child.pid, "SIGKILL");
    }
    await this.#exited;
    // The group got SIGKILL when the server exited; wait (briefly) until the kernel has torn
    // its processes down, so "stopped" means gone, even on a loaded machine.
    await groupGone(child.pid, GROUP_TEARDOWN_MS);
    this.#buffer.clear();
  }
}

/** How long close() waits for the server's process group to vanish after its SIGKILL. */
const GROUP_TEARDOWN_MS = 2_000;

async function groupGone(pid: number | undefined, timeoutMs: number): Promise<void> {
  if (pid === undefined) return;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      process.kill(-pid, 0);
    } catch {
      return; // ESRCH: no process left in the group.
    }
    await delay(20);
  }
}

/** Signals every process of the group led by `pid`; a group already gone is fine. */
function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: nothing left in the group.
  }
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
