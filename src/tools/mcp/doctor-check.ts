/**
 * The doctor's check of the configured MCP servers (`npm run doctor`): each server is started
 * or reached as a worker would, its tools are listed, and it is stopped again. One line per
 * server; a failure names the server, what went wrong and what to change.
 */
import type { McpSection, McpServerConfig } from "../../../config/tool-sections.js";
import { describeNetworkError, fail, hostOf, ok, type CheckResult, type DoctorCheck } from "../../doctor/check.js";
import { silentLogger } from "../../logger.js";
import { McpConnection } from "./connection.js";

/** The check of every server in `section`; undefined when none is configured. */
export function mcpDoctorCheck(section: McpSection | undefined, options: { clientVersion?: string } = {}): DoctorCheck | undefined {
  const servers = Object.entries(section?.servers ?? {});
  if (servers.length === 0) return undefined;
  return {
    group: "mcp",
    run: ({ timeoutMs }) => Promise.all(servers.map(([name, config]) => checkServer(name, config, timeoutMs, options.clientVersion ?? "0"))),
  };
}

async function checkServer(name: string, config: McpServerConfig, timeoutMs: number, clientVersion: string): Promise<CheckResult> {
  const limitMs = Math.min(timeoutMs, config.connect_timeout_ms);
  // Its own connect timeout bounds the SDK's requests; the race bounds a server that never answers at all.
  const connection = new McpConnection({ name, config: { ...config, connect_timeout_ms: limitMs }, logger: silentLogger, clientVersion, stopGraceMs: 1_000 });
  let timer: NodeJS.Timeout | undefined;
  try {
    const listed = await Promise.race([
      connection.listTools(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(Object.assign(new Error("timed out"), { name: "TimeoutError" })), limitMs + 1_000);
      }),
    ]);
    return ok("mcp", `server "${name}" (${where(config)}): ${listed.length} ${listed.length === 1 ? "tool" : "tools"}`);
  } catch (error) {
    return fail("mcp", `server "${name}" (${where(config)}) did not list its tools: ${reason(error, limitMs)}`, fixFor(name, config));
  } finally {
    clearTimeout(timer);
    await connection.close().catch(() => undefined);
  }
}

/** The program (never its arguments or environment, which may carry secrets) or the host. */
const where = (config: McpServerConfig) => (config.command !== undefined ? `stdio: ${config.command}` : `http: ${hostOf(config.url ?? "")}`);

function reason(error: unknown, limitMs: number): string {
  const described = describeNetworkError(error);
  if (described === "timed out" || /timed out|timeout/i.test(described)) return `no answer within ${Math.round(limitMs / 100) / 10} s`;
  // The SDK's messages can be long (a whole HTTP body): the first line, bounded.
  const line = described.split("\n")[0] ?? "";
  return line.length > 160 ? `${line.slice(0, 157)}…` : line;
}

function fixFor(name: string, config: McpServerConfig): string {
  return config.command !== undefined
    ? `check mcp.servers.${name}.command, args and cwd in the config file: run that command by hand and see that it starts an MCP server on stdio`
    : `check that the server at mcp.servers.${name}.url is running and reachable from here, and its headers (a token as \${VAR})`;
}
