/**
 * The `mcp` and `access` sections of the configuration file (issue #13): which MCP servers
 * the workers may start or reach, and which chats and users may use which of them.
 *
 *   mcp:
 *     servers:
 *       files: { command: node, args: [...], tools: { include: ["read_*"] }, approval: never }
 *       search: { url: http://127.0.0.1:3001/mcp, headers: { Authorization: "Bearer ${SEARCH_TOKEN}" } }
 *   access:
 *     tools: { default: [files], chats: { "tg:-1001234": [files, search] }, users: { "tg:42": ["*"] } }
 */
import { z } from "zod";

/** Server names become tool-name prefixes (`files__read_file`): no `__` inside, so the split stays unambiguous. */
const serverName = z.string().regex(/^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$/, "letters, digits, - and single _ only");

/** Tool name patterns: `*` matches any run of characters, `?` one. */
const patterns = z.array(z.string().min(1));

const approval = z
  .union([z.enum(["never", "always"]), z.strictObject({ tools: patterns.min(1).describe("Tools (patterns) that need approval; the rest run freely") })])
  .default("never")
  .describe("never | always | { tools: [...] }: calls a person must approve before they run");

const serverFields = z.strictObject({
  command: z.string().min(1).optional().describe("stdio: the program to start (e.g. node)"),
  args: z.array(z.string()).optional().describe("stdio: its arguments"),
  cwd: z.string().min(1).optional().describe("stdio: its working directory"),
  env: z.record(z.string(), z.string()).optional().describe("stdio: its environment; only what is listed is passed on (besides PATH, HOME and the like)"),
  url: z.url({ protocol: /^https?$/ }).optional().describe("streamable HTTP: the server's endpoint"),
  headers: z.record(z.string(), z.string()).optional().describe("streamable HTTP: request headers (secrets as ${VAR})"),
  timeout_ms: z.number().int().positive().default(60_000).describe("Longest one tool call may take"),
  connect_timeout_ms: z.number().int().positive().default(15_000).describe("Longest connecting and listing tools may take"),
  tools: z.strictObject({
    include: patterns.default(["*"]),
    exclude: patterns.default([]),
  }).default({ include: ["*"], exclude: [] }).describe("Which of the server's tools are offered"),
  approval,
  max_output_chars: z.number().int().positive().optional().describe("Output cap of this server's tools; unset: TOOL_OUTPUT_MAX_CHARS"),
});

const server = serverFields.superRefine((value, context) => {
  const stdio = value.command !== undefined;
  const http = value.url !== undefined;
  if (stdio === http) context.addIssue({ code: "custom", message: "set either command (a stdio server) or url (a streamable HTTP server)" });
  if (!stdio) for (const key of ["args", "cwd", "env"] as const) if (value[key] !== undefined) context.addIssue({ code: "custom", path: [key], message: "only for stdio servers (with command)" });
  if (!http && value.headers !== undefined) context.addIssue({ code: "custom", path: ["headers"], message: "only for HTTP servers (with url)" });
});

export const mcpSection = z.strictObject({
  servers: z.record(serverName, server).default({}),
});

/** `tg:<id>`, `dc:<id>` (a Discord channel, or `dc:dm:<user>`), `console:<name>`. */
const chatKey = z.string().regex(/^(tg|dc|console):.+$/, "tg:<id>, dc:<id> or console:<name>");
const grants = z.array(z.union([z.literal("*"), serverName]));

export const accessSection = z.strictObject({
  tools: z.strictObject({
    default: grants.default([]).describe("Servers every chat may use"),
    chats: z.record(chatKey, grants).default({}).describe("More servers for one chat (session key, or its chat for topics and threads)"),
    users: z.record(chatKey, grants).default({}).describe("More servers for one user, wherever every speaker of the turn has them"),
  }).optional(),
});

export type McpSection = z.infer<typeof mcpSection>;
export type McpServerConfig = McpSection["servers"][string];
export type AccessSection = z.infer<typeof accessSection>;
export type ToolAccessConfig = NonNullable<AccessSection["tools"]>;

/**
 * Built-in tools that are off until `access.tools` names them (a chat, a user or `default`):
 * `"*"` grants every MCP server but none of these, so reaching the web is always a named choice.
 */
export const OPTIONAL_TOOLS: readonly string[] = ["fetch_url", "delegate"];

/** Names in `access.tools` must be servers of `mcp.servers` or optional built-ins; a server may not take a built-in's name. → issue lines, path first. */
export function checkToolSections(sections: { mcp?: McpSection; access?: AccessSection }): string[] {
  const servers = Object.keys(sections.mcp?.servers ?? {});
  const lines: string[] = [];
  for (const name of servers) if (OPTIONAL_TOOLS.includes(name)) lines.push(`  mcp.servers.${name}: "${name}" is a built-in tool's name; name the server otherwise`);
  const known = new Set([...servers, ...OPTIONAL_TOOLS]);
  const tools = sections.access?.tools;
  if (!tools) return lines;
  const check = (path: string, names: readonly string[]) => {
    for (const name of names) if (name !== "*" && !known.has(name)) lines.push(`  ${path}: no server "${name}" in mcp.servers (nor a built-in tool: ${OPTIONAL_TOOLS.join(", ")})`);
  };
  check("access.tools.default", tools.default);
  for (const [key, names] of Object.entries(tools.chats)) check(`access.tools.chats.${key}`, names);
  for (const [key, names] of Object.entries(tools.users)) check(`access.tools.users.${key}`, names);
  return lines;
}
