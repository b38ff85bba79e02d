/**
 * The room map in docs/architecture.md, drawn by dependency-cruiser from the code itself
 * (`npm run deps:graph`): a table of the rooms (what each owns, which rooms it uses, which use
 * it), a mermaid picture of the arrows between them, and the layering rules with their reasons,
 * read from .dependency-cruiser.cjs. `--check` writes nothing and exits 1 when the doc differs
 * from what the code says now (test/unit/layering.test.ts runs it), so the map cannot drift.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const root = new URL("../", import.meta.url).pathname;
const docPath = join(root, "docs/architecture.md");
const START = "<!-- room-map:start (npm run deps:graph writes this part) -->";
const END = "<!-- room-map:end -->";

/**
 * What each room owns. A room the code has and this table lacks fails the script: a new room
 * gets its line here when it is made.
 */
const ROOMS: Record<string, string> = {
  "config": "the typed configuration: schema (every key, default, description), loading from env and YAML",
  "src/core": "types every layer shares (messages, replies, targets, the LLM request shape), time stamps, stages, formatting; imports nothing of ours",
  "src/errors.ts": "the error classes named for what the caller must do (permanent, retryable, overflow, aborted, budget)",
  "src/logger.ts": "pino, with every configured secret redacted",
  "src/metrics.ts": "Prometheus metrics (the only prom-client user)",
  "src/context": "the context engine, pure: tokens, hygiene and compaction decisions, prune, boundaries, summarize, assemble, caching, overflow detection",
  "src/session": "the Redis session store: keys (hash-tagged per session), Lua scripts, lease, inbox, live context, transcript, outbox, previews",
  "src/session-context": "the context engine bound to a session's state: hygiene, in-loop, reactive and idle compaction, calibration, the hooks memory hangs on a fold",
  "src/llm": "the LLM client (the only code that talks to model endpoints): requests, streaming, retries, error classification, the summarizer",
  "src/models": "the model catalogue (/model, personas, prices) and the router that binds each model's client and context engine",
  "src/budget": "budgets: Redis counters, reserve → settle around each call, the metered client, /budget and /usage lines",
  "src/memory": "long-term memory: facts per user and chat, the memory tool, snapshot and pins, the flush before a fold, data rights",
  "src/tools": "the tool registry the agent sees: built-ins (recall, time), MCP servers (tools/mcp, the only MCP SDK user), access, output caps, approval texts",
  "src/media": "attachments: download, size checks, transcription, document text, image parts",
  "src/schedule": "reminders and scheduled tasks: items, recurrence, firing through ports (alarms, inbox)",
  "src/agent": "the turn: the turn's types and ports, one handler per segment kind (chat, command, button press, reminder), the tool loop, the orchestrator that sequences them",
  "src/queue": "BullMQ: queue names, job payloads, producers, Redis connections",
  "src/adapters": "Telegram, Discord and the console: platform update → InboundMessage, OutboundReply → platform (the only grammy and discord.js users)",
  "src/gateway": "the gateway process: adapters, ingress (access → dedupe → inbox → enqueue), delivery, live previews, HTTP",
  "src/operator": "what an operator changes from outside the chats (pairing approve/deny, dead-letter retry/drop), one code path for the CLIs, the web console, setup and /pair, each action logged with its operator",
  "src/web": "the operator's web console under /console (off unless CONSOLE_WEB_TOKEN): login, server-rendered pages, uPlot charts served from node_modules",
  "src/doctor": "the setup checks behind `npm run doctor` and the start-up checks",
  "src/setup": "the first run (`npm run setup`): provider presets, the model and token checks, pairing the operator in place, editing the YAML file and .env",
  "src/eval": "the evaluation harness (`npm run eval`): scripted dialogues scored against the engine",
  "src/cli": "command-line entry points (doctor, pairing, admin, eval, setup): thin, they call the rooms above",
  "src/embedded-redis.ts": "a private redis-server for `npm start` when none listens",
  "src/process-io.ts": "the console's wiring of stdin/stdout to the gateway",
  "src/heap.ts": "V8's heap sizing for a longhaul process (the old generation's growth after a full collection)",
  "src/main.ts": "the entry point: role all, gateway or worker; the only place config is loaded",
  "workers": "the worker role: turn, idle-compaction and schedule workers; process-turn.ts is the pipeline on one screen",
};

/** Rooms every room may use; drawn in the table, left out of the picture to keep it readable. */
const FOUNDATION = new Set(["config", "src/core", "src/errors.ts", "src/logger.ts", "src/metrics.ts"]);

interface CruiseModule {
  source: string;
  dependencies: Array<{ resolved: string; coreModule?: boolean }>;
}

function cruiseRooms(): Map<string, Set<string>> {
  const cli = join(root, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");
  const result = spawnSync(process.execPath, [
    cli, "src", "workers", "--config", ".dependency-cruiser.cjs", "--output-type", "json",
    "--include-only", "^(src|workers|config)/",
    "--collapse", "^(src/[^/]+/|src/[^/]+\\.ts$|workers/|config/)",
  ], { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`dependency-cruiser failed (${result.status}):\n${result.stderr}`);
  const modules = (JSON.parse(result.stdout) as { modules: CruiseModule[] }).modules;
  const room = (path: string) => path.replace(/\/$/, "");
  const edges = new Map<string, Set<string>>();
  for (const module of modules) {
    const from = room(module.source);
    if (!edges.has(from)) edges.set(from, new Set());
    for (const dependency of module.dependencies) {
      if (dependency.coreModule) continue;
      const to = room(dependency.resolved);
      if (to !== from) edges.get(from)!.add(to);
    }
  }
  return edges;
}

interface Rule { name: string; comment?: string }

function render(edges: Map<string, Set<string>>): string {
  const rooms = [...edges.keys()].sort();
  const missing = rooms.filter((name) => !(name in ROOMS));
  if (missing.length > 0) throw new Error(`rooms without a description in scripts/deps-graph.ts: ${missing.join(", ")}`);
  const users = new Map<string, string[]>(rooms.map((name) => [name, rooms.filter((other) => edges.get(other)!.has(name))]));
  const id = (name: string) => name.replace(/[^a-z0-9]/gi, "_");
  const label = (name: string) => name.replace(/^src\//, "");
  const code = (names: readonly string[]) => (names.length === 0 ? "—" : names.map((name) => `\`${label(name)}\``).join(", "));
  const order = Object.keys(ROOMS);

  const lines = [START, "", "| room | what it owns | uses | used by |", "|---|---|---|---|"];
  for (const name of order.filter((room) => edges.has(room))) {
    lines.push(`| \`${label(name)}\` | ${ROOMS[name]} | ${code([...edges.get(name)!].sort())} | ${code(users.get(name)!)} |`);
  }
  lines.push("", `The arrows between rooms (A → B: A imports B), foundation rooms (${[...FOUNDATION].map((name) => `\`${label(name)}\``).join(", ")}) left out:`, "", "```mermaid", "flowchart TD");
  for (const name of order.filter((room) => edges.has(room) && !FOUNDATION.has(room))) lines.push(`  ${id(name)}["${label(name)}"]`);
  for (const name of order.filter((room) => edges.has(room) && !FOUNDATION.has(room))) {
    for (const target of [...edges.get(name)!].sort()) if (!FOUNDATION.has(target)) lines.push(`  ${id(name)} --> ${id(target)}`);
  }
  lines.push("```", "", "The rules that hold these directions (`.dependency-cruiser.cjs`; a violation fails `npm test` with the rule's name and the arrow):", "", "| rule | why |", "|---|---|");
  const require = createRequire(import.meta.url);
  const rules = (require(join(root, ".dependency-cruiser.cjs")) as { forbidden: Rule[] }).forbidden;
  for (const rule of rules) lines.push(`| \`${rule.name}\` | ${rule.comment ?? ""} |`);
  lines.push("", END);
  return lines.join("\n");
}

const doc = readFileSync(docPath, "utf8");
const start = doc.indexOf(START);
const end = doc.indexOf(END);
if (start < 0 || end < start) throw new Error(`${docPath} has no room-map markers`);
const updated = doc.slice(0, start) + render(cruiseRooms()) + doc.slice(end + END.length);
if (process.argv.includes("--check")) {
  if (updated !== doc) {
    console.error("docs/architecture.md: the room map differs from the code; run `npm run deps:graph`");
    process.exit(1);
  }
  console.log("docs/architecture.md: the room map matches the code");
} else if (updated !== doc) {
  writeFileSync(docPath, updated);
  console.log("docs/architecture.md: room map written");
} else {
  console.log("docs/architecture.md: room map unchanged");
}
