/**
 * Real MCP servers for tests, started the way an operator configures them: `node
 * node_modules/<pkg>/dist/index.js` (devDependencies), and helpers to look at processes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify as stringifyYaml } from "yaml";
import { expect } from "vitest";
import type { RecordedRequest } from "../fakes/fake-llm.js";
import { fileURLToPath } from "node:url";
import type { McpServerConfig } from "../../config/tool-sections.js";
import { freePort } from "./redis-server.js";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const EVERYTHING = `${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`;
export const FILESYSTEM = `${ROOT}node_modules/@modelcontextprotocol/server-filesystem/dist/index.js`;
export const SPAWNER = `${ROOT}test/fixtures/mcp/spawning-server.mjs`;

const defaults = { timeout_ms: 30_000, connect_timeout_ms: 20_000, tools: { include: ["*"], exclude: [] }, approval: "never" as const };

export const stdioServer = (args: string[], overrides: Partial<McpServerConfig> = {}): McpServerConfig =>
  ({ ...defaults, command: process.execPath, args, ...overrides });

export const httpServer = (url: string, overrides: Partial<McpServerConfig> = {}): McpServerConfig => ({ ...defaults, url, ...overrides });

/** server-everything over streamable HTTP on a port of its own; `restart()` keeps the port. */
export async function startEverythingHttp(): Promise<{ url: string; restart(): Promise<void>; stop(): Promise<void> }> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn(process.execPath, [EVERYTHING, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"] });
    child = started;
    await new Promise<void>((resolve, reject) => {
      let err = "";
      const timer = setTimeout(() => reject(new Error(`server-everything did not listen: ${err}`)), 20_000);
      started.stderr?.on("data", (chunk: Buffer) => {
        err += chunk.toString();
        if (/listening on port/i.test(err)) {
          clearTimeout(timer);
          resolve();
        }
      });
      started.once("exit", () => reject(new Error(`server-everything exited: ${err}`)));
    });
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once("exit", () => resolve());
      running.kill("SIGKILL");
    });
  };
  await start();
  return { url: `http://127.0.0.1:${port}/mcp`, restart: async () => { await stop(); await start(); }, stop };
}

/** Alive, and not a zombie waiting to be reaped. */
export function processAlive(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return false;
  try {
    return !/^\d+ \(.*\) [ZX] /.test(readFileSync(stat, "utf8"));
  } catch {
    return false;
  }
}

/** Pids of live processes whose command line contains `marker`. */
export function processesMatching(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSafe("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmdline.includes(marker) && processAlive(Number(entry))) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

function readdirSafe(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

/** A config file (LONGHAUL_CONFIG_FILE) holding these nested sections. */
export function writeConfigFile(sections: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), "lh-mcp-config-"));
  const file = join(dir, "longhaul.yaml");
  writeFileSync(file, stringifyYaml(sections));
  return file;
}

/** Every assistant tool call in a request is followed by exactly one result (providers refuse a call without one). */
export function assertCallsAnswered(request: RecordedRequest): void {
  const messages = request.body.messages;
  messages.forEach((message, index) => {
    for (const call of message.tool_calls ?? []) {
      const answered = messages.slice(index + 1).filter((later) => later.role === "tool" && later.tool_call_id === call.id);
      expect(answered, `tool call ${call.id} in request ${request.index}`).toHaveLength(1);
    }
  });
}
