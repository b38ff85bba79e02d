/**
 * MCP tool calls (issue #13): time from a tool call to its result for server-everything's echo
 * over stdio and over streamable HTTP (p50 / p99 after a warm-up), against an in-process
 * built-in tool for scale, stdio as the baseline of the ratio; and the memory one connected stdio
 * server costs (its resident set, read from /proc, and the client side's heap growth).
 *
 *   npx tsx bench/mcp.ts [calls]
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createLogger } from "../src/logger.js";
import { McpManager, currentTimeTool, type Tool, type ToolContext } from "../src/tools/index.js";
import { isMain, percentile, table } from "./stats.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const EVERYTHING = `${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`;
const defaults = { timeout_ms: 30_000, connect_timeout_ms: 30_000, tools: { include: ["*"], exclude: [] }, approval: "never" as const };

const context: ToolContext = {
  sessionKey: "bench", signal: new AbortController().signal, now: Date.now,
  transcript: { get: async () => undefined, search: async () => ({ messages: [], scanned: 0, continueBefore: undefined }) },
  outputs: { read: async () => undefined },
};

async function timeCalls(tool: Tool, args: Record<string, unknown>, calls: number): Promise<number[]> {
  for (let index = 0; index < 20; index++) await tool.run(args, context);
  const times: number[] = [];
  for (let index = 0; index < calls; index++) {
    const started = performance.now();
    await tool.run(args, context);
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN);

async function startHttpServer(port: number): Promise<() => void> {
  const child = spawn(process.execPath, [EVERYTHING, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"] });
  await new Promise<void>((resolve, reject) => {
    let err = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      err += chunk.toString();
      if (/listening on port/i.test(err)) resolve();
    });
    child.once("exit", () => reject(new Error(err)));
  });
  return () => child.kill("SIGKILL");
}

export async function main(args: string[] = process.argv.slice(2)): Promise<string> {
  const calls = Number(args[0] ?? 500);
  const logger = createLogger({ level: "silent" } as never);
  const port = 30_000 + Math.floor(Math.random() * 20_000);
  const stopHttp = await startHttpServer(port);
  const servers = 4;
  const stdioConfig = { ...defaults, command: process.execPath, args: [EVERYTHING, "stdio"] };
  const manager = new McpManager({
    logger,
    config: { servers: { web: { ...defaults, url: `http://127.0.0.1:${port}/mcp` }, ...Object.fromEntries(Array.from({ length: servers }, (_, index) => [`s${index}`, stdioConfig])) } },
  });
  try {
    const heapBefore = process.memoryUsage().heapUsed;
    const [web, ...stdio] = await manager.toolsFor(["web", ...Array.from({ length: servers }, (_, index) => `s${index}`)]);
    const heapAfter = process.memoryUsage().heapUsed;
    const echo = (entry: typeof web, name: string) => entry!.tools.find((tool) => tool.definition.function.name === name)!;
    const builtin = await timeCalls(currentTimeTool, {}, calls);
    const overStdio = await timeCalls(echo(stdio[0], "s0__echo"), { message: "ping" }, calls);
    const overHttp = await timeCalls(echo(web, "web__echo"), { message: "ping" }, calls);
    const rss = Array.from({ length: servers }, (_, index) => rssKb(manager.connection(`s${index}`)!.pid!));
    const row = (label: string, times: number[]) => [label, percentile(times, 50), percentile(times, 99), percentile(times, 50) / percentile(overStdio, 50)];
    const report = [
      `MCP tool calls: ${calls} calls each after 20 warm-up calls (ms; ratio = p50 / stdio's p50)`,
      "",
      table(["call", "p50 ms", "p99 ms", "ratio"], [row("built-in current_time (in process)", builtin), row("echo over stdio (baseline)", overStdio), row("echo over streamable HTTP", overHttp)]),
      "",
      `Memory per connected stdio server (server-everything, ${servers} started):`,
      "",
      table(["measure", "value"], [
        ["server RSS, median (MB)", percentile([...rss].sort((a, b) => a - b), 50) / 1024],
        ["client heap growth per server (KB)", Math.max(0, heapAfter - heapBefore) / 1024 / (servers + 1)],
      ]),
    ].join("\n");
    console.log(report);
    return report;
  } finally {
    await manager.close();
    stopHttp();
  }
}

if (isMain(import.meta.url)) await main();
