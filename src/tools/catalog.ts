/**
 * Every tool a worker can offer, and the part of it one turn gets: the built-ins everywhere,
 * the opt-in built-ins (`fetch_url`) and MCP servers as `access.tools` allows for the chat and
 * its speakers (servers connected lazily).
 */
import type { ToolAccessConfig } from "../../config/tool-sections.js";
import type { ToolDefinition } from "../core/messages.js";
import type { Logger } from "../logger.js";
import { allowedOptionalTools, allowedServers, type ToolScope } from "./access.js";
import type { McpManager, ServerTools } from "./mcp/index.js";
import { ToolRegistry, type Tool } from "./registry.js";

export interface TurnTools {
  tools: ToolRegistry;
  /** Per allowed server: its tools, or why it has none this turn. */
  servers: ServerTools[];
  /** The opt-in built-ins this turn may use. */
  optional: Tool[];
}

export interface ToolCatalogOptions {
  builtins: readonly Tool[];
  /** Built-ins offered only where `access.tools` names them (config OPTIONAL_TOOLS). */
  optional?: readonly Tool[];
  mcp?: McpManager | undefined;
  access?: ToolAccessConfig | undefined;
  logger: Logger;
}

export class ToolCatalog {
  readonly #options: ToolCatalogOptions;
  readonly #builtins: ToolRegistry;

  constructor(options: ToolCatalogOptions) {
    this.#options = options;
    this.#builtins = new ToolRegistry(options.builtins);
  }

  /** The built-ins alone: what every chat has. */
  get builtins(): ToolRegistry {
    return this.#builtins;
  }

  builtinDefinitions(): ToolDefinition[] {
    return this.#builtins.definitions();
  }

  allowedServers(scope: ToolScope): string[] {
    return allowedServers(this.#options.mcp?.serverNames ?? [], this.#options.access, scope);
  }

  /** The tools of one turn. A server that cannot be reached is left out; the turn goes on without it. */
  async forTurn(scope: ToolScope, log: Logger): Promise<TurnTools> {
    const mcp = this.#options.mcp;
    const servers = mcp ? await mcp.toolsFor(this.allowedServers(scope)) : [];
    const tools = new ToolRegistry(this.#options.builtins);
    const optionalNames = allowedOptionalTools((this.#options.optional ?? []).map((tool) => tool.definition.function.name), this.#options.access, scope);
    const optional = (this.#options.optional ?? []).filter((tool) => optionalNames.includes(tool.definition.function.name));
    for (const tool of optional) tools.register(tool);
    for (const entry of servers) {
      if (entry.unavailable) log.info({ mcpServer: entry.server, reason: entry.unavailable }, "mcp-server-left-out-of-turn");
      for (const tool of entry.tools) tools.register(tool);
    }
    return { tools, servers, optional };
  }

  async close(): Promise<void> {
    await this.#options.mcp?.close();
  }
}

/** `/tools`: what this chat can use, by server. */
export function describeTools(turn: TurnTools, builtins: ToolRegistry): string {
  const lines = ["Tools I can use in this chat:", ...[...builtins.list(), ...turn.optional].map((tool) => `• ${tool.definition.function.name} — ${firstSentence(tool.definition.function.description)}`)];
  for (const entry of turn.servers) {
    lines.push("", `${entry.server} (MCP server)${entry.unavailable ? `: unavailable right now (${entry.unavailable})` : ""}`);
    for (const tool of entry.tools) {
      lines.push(`• ${tool.definition.function.name}${tool.needsApproval === true ? " 🔐 asks for approval" : tool.needsApproval ? " 🔐 some calls ask for approval" : ""} — ${firstSentence(tool.definition.function.description)}`);
    }
    if (!entry.unavailable && entry.tools.length === 0) lines.push("• (no tools offered)");
  }
  if (turn.servers.length === 0) lines.push("", "No MCP servers are enabled for this chat.");
  return lines.join("\n");
}

function firstSentence(text: string): string {
  const line = text.split("\n")[0] ?? "";
  const end = line.search(/\.(\s|$)/);
  const sentence = end >= 0 ? line.slice(0, end + 1) : line;
  return sentence.length > 160 ? `${sentence.slice(0, 159)}…` : sentence;
}
