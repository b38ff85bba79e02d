/**
 * The house's layering, held by dependency-cruiser (`npm run deps:check`; run by npm test in
 * test/unit/layering.test.ts). Type-only imports count (tsPreCompilationDeps): a type shared by
 * two modules lives in a module below both. The room map in docs/architecture.md is drawn from
 * this same tool (`npm run deps:graph`).
 *
 * TypeScript 7 has no JS API, so dependency-cruiser parses with swc (@swc/core). Its visitor
 * sees an `import("…")` type only in some positions, so such types are not written at all
 * (test/unit/layering.test.ts fails on one): `import type` says the same and is always seen.
 */

/** A module specifier of ours, by room. */
const ours = "^(src|workers|config)/";

/** Each SDK and heavy library is imported by the one room that owns it (STYLE.md). */
const owned = [
  { name: "grammy", pkg: "grammy|@grammyjs", owner: "^src/adapters/telegram/" },
  { name: "discord.js", pkg: "discord\\.js|@discordjs|discord-api-types", owner: "^src/adapters/discord/" },
  { name: "bullmq", pkg: "bullmq", owner: "^(src/queue/|src/gateway/delivery\\.ts$|workers/)" },
  { name: "openai", pkg: "openai", owner: "^src/llm/" },
  // The LLM transport, and fetch_url's SSRF-checked page fetcher (its own connector and lookup).
  { name: "undici", pkg: "undici", owner: "^src/(llm|tools/web)/" },
  { name: "ipaddr", pkg: "ipaddr\\.js", owner: "^src/tools/web/" },
  // Web pages are parsed in the extraction worker thread, with its memory and time limits.
  { name: "readability", pkg: "@mozilla/readability|linkedom", owner: "^src/media/extract-worker\\.ts$" },
  { name: "mcp", pkg: "@modelcontextprotocol", owner: "^src/tools/mcp/" },
  { name: "pdfjs", pkg: "pdfjs-dist", owner: "^src/media/" },
  // Ogg/Opus of voice replies: read (duration, waveform) where the speech is made.
  { name: "mediabunny", pkg: "mediabunny", owner: "^src/media/" },
  { name: "prom-client", pkg: "prom-client", owner: "^src/metrics\\.ts$" },
];

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No module imports a module that imports it, type imports included: move the shared type below both.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...owned.map(({ name, pkg, owner }) => ({
      name: `sdk-owner-${name}`,
      comment: `Only ${owner} imports ${name}: the rest of the house goes through that room's own interface.`,
      severity: "error",
      from: { path: ours, pathNot: owner },
      to: { path: `^(node_modules/)?(${pkg})(/|$)` },
    })),
    {
      name: "core-imports-nothing-of-ours",
      comment: "src/core holds the types every layer shares; it imports nothing of ours.",
      severity: "error",
      from: { path: "^src/core/" },
      to: { path: ours, pathNot: "^src/core/" },
    },
    {
      name: "context-only-core",
      comment: "The context engine is pure: tokens, hygiene, prune, summarize, assemble — on src/core only (no Redis, no HTTP, no LLM client).",
      severity: "error",
      from: { path: "^src/context/" },
      to: { path: ours, pathNot: "^src/(core|context)/" },
    },
    {
      name: "session-below-the-turn",
      comment: "The Redis session store sits under the turn: it knows the core types and the context engine's, nothing above.",
      severity: "error",
      from: { path: "^src/session/" },
      to: { path: ours, pathNot: "^src/(core|context|session)/" },
    },
    {
      name: "session-context-below-the-turn",
      comment: "The context engine bound to a session is used by the agent and the model catalogue; it knows neither.",
      severity: "error",
      from: { path: "^src/session-context/" },
      to: { path: ours, pathNot: "^src/(core|context|session|session-context)/|^src/(errors|logger|metrics)\\.ts$" },
    },
    {
      name: "schedule-through-ports",
      comment: "The schedule domain reaches the queue and the platforms only through ports (alarms, inbox).",
      severity: "error",
      from: { path: "^src/schedule/" },
      to: { path: ours, pathNot: "^src/(core|session|schedule)/|^src/logger\\.ts$|^config/" },
    },
    {
      name: "adapters-not-the-pipeline",
      comment: "Adapters translate platforms into InboundMessage and send OutboundReply; they never reach the agent, the session store, the queue or the workers.",
      severity: "error",
      from: { path: "^src/adapters/" },
      to: { path: "^src/(agent|session|session-context|queue|budget|memory|schedule|models|llm|tools|gateway)/|^workers/" },
    },
    {
      name: "rooms-below-the-agent",
      comment: "The agent uses the rooms below it (models, memory, budget, tools, media, schedule, llm); none of them imports the agent.",
      severity: "error",
      from: { path: "^src/(models|memory|budget|tools|media|schedule|llm|session|session-context|context|core|queue|adapters|doctor)/" },
      to: { path: "^src/agent/" },
    },
    {
      name: "commands-not-the-orchestrator",
      comment: "Chat commands and segment handlers never import the orchestrator that sequences them.",
      severity: "error",
      from: { path: "^src/agent/", pathNot: "^src/agent/index\\.ts$" },
      to: { path: "^src/agent/run-segments\\.ts$" },
    },
    {
      name: "workers-only-from-main",
      comment: "The worker role is started by src/main.ts; nothing else in src imports workers/.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/main\\.ts$" },
      to: { path: "^workers/" },
    },
    {
      name: "not-to-unresolvable",
      comment: "Every import resolves (a module of ours, an installed package, a node: builtin): a file type the resolver does not know would hide its arrows.",
      severity: "error",
      from: { path: ours },
      to: { couldNotResolve: true },
    },
    {
      name: "no-orphans",
      comment: "A module in src/ that nothing imports is dead code (entry points and declarations aside).",
      severity: "error",
      from: { orphan: true, path: "^src/", pathNot: ["\\.d\\.ts$", "^src/main\\.ts$", "^src/cli/[^/]+\\.ts$"] },
      to: {},
    },
  ],
  options: {
    parser: "swc",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(test|bench|dist)/" },
    enhancedResolveOptions: {
      extensions: [".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json"],
      // Packages that name their entry points in `exports` (grammy/types, the MCP SDK), types-only ones included.
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
    },
    reporterOptions: {
      archi: { collapsePattern: "^(src/[^/]+|workers|config)" },
    },
  },
};
