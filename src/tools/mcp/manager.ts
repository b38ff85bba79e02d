/**
 * The MCP servers of one worker process: a connection per configured server (none is started
 * before a turn needs it), the tools each offers as `server__tool`, and shutdown of them all.
 */
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { McpSection, McpServerConfig } from "../../../config/tool-sections.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { Tool } from "../registry.js";
import { McpConnection } from "./connection.js";
import { exposedToolName, matchesAny } from "./naming.js";

export interface McpManagerOptions {
  config: McpSection;
  logger: Logger;
  /** Reported to servers in `initialize`. */
  clientVersion?: string;
  now?: () => number;
  stopGraceMs?: number;
}

/** One server's part of a turn's tools. */
export interface ServerTools {
  server: string;
  tools: Tool[];
  /** Why it offers nothing this turn (disabled, unreachable). */
  unavailable?: string;
}

export class McpManager {
  readonly #connections = new Map<string, McpConnection>();
  readonly #log: Logger;

  constructor(options: McpManagerOptions) {
    this.#log = options.logger.child({ component: "mcp" });
    for (const [name, config] of Object.entries(options.config.servers)) {
      this.#connections.set(name, new McpConnection({
        name, config, logger: this.#log, clientVersion: options.clientVersion ?? "0",
        ...(options.now ? { now: options.now } : {}),
        ...(options.stopGraceMs === undefined ? {} : { stopGraceMs: options.stopGraceMs }),
      }));
    }
  }

  get serverNames(): string[] {
    return [...this.#connections.keys()].sort();
  }

  connection(name: string): McpConnection | undefined {
    return this.#connections.get(name);
  }

  /** The tools of `servers`, connecting to those not yet connected (in parallel). */
  async toolsFor(servers: readonly string[]): Promise<ServerTools[]> {
    return Promise.all(servers.map(async (server): Promise<ServerTools> => {
      const connection = this.#connections.get(server);
      if (!connection) return { server, tools: [], unavailable: "not configured" };
      try {
        const listed = await connection.listTools();
        return { server, tools: adaptTools(connection, listed, this.#log) };
      } catch (error) {
        return { server, tools: [], unavailable: errorMessage(error) };
      }
    }));
  }

  /** Stops every server; stdio servers with their whole process tree. */
  async close(): Promise<void> {
    await Promise.all([...this.#connections.values()].map((connection) => connection.close()));
  }
}

/** The server's tools that its `tools` filter lets through, as tools of ours. */
function adaptTools(connection: McpConnection, listed: readonly McpTool[], log: Logger): Tool[] {
  const { config, name: server } = connection;
  const taken = new Set<string>();
  return [...listed]
    .filter((tool) => matchesAny(tool.name, config.tools.include) && !matchesAny(tool.name, config.tools.exclude))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((tool) => {
      const exposed = exposedToolName(server, tool.name, taken);
      taken.add(exposed);
      return adaptTool(connection, tool, exposed, log);
    });
}

function adaptTool(connection: McpConnection, tool: McpTool, exposed: string, log: Logger): Tool {
  const { config, name: server } = connection;
  // `$schema` tells the model nothing and some providers refuse it.
  const { $schema: _schema, ...parameters } = tool.inputSchema as Record<string, unknown>;
  return {
    definition: {
      type: "function",
      function: { name: exposed, description: tool.description ?? tool.title ?? tool.name, parameters: { ...parameters, type: "object" } },
    },
    needsApproval: needsApproval(config, tool.name),
    ...(config.max_output_chars === undefined ? {} : { maxOutputChars: config.max_output_chars }),
    origin: { server, tool: tool.name },
    async run(args, context) {
      // Arguments and results only at debug: they may hold whatever the user shared.
      log.debug({ mcpServer: server, tool: tool.name, args }, "mcp-tool-call");
      const started = performance.now();
      const output = await connection.callTool(tool.name, args, exposed, context.signal);
      log.debug({ mcpServer: server, tool: tool.name, ms: Math.round(performance.now() - started), isError: output.isError === true, chars: output.text.length, result: output.text.slice(0, 2_000) }, "mcp-tool-result");
      return output;
    },
  };
}

export function needsApproval(config: McpServerConfig, tool: string): boolean {
  if (config.approval === "always") return true;
  if (config.approval === "never") return false;
  return matchesAny(tool, config.approval.tools);
}
