/**
 * The MCP client against real servers from npm (server-everything over stdio and streamable
 * HTTP, server-filesystem) and a fixture server with a process of its own: tool listing and
 * naming, result conversion, errors, cancellation, a server killed mid-call, a restarted HTTP
 * server, repeated crashes, and no process left behind.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { McpServerConfig } from "../../../config/tool-sections.js";
import { McpManager, type Tool, type ToolContext } from "../../../src/tools/index.js";
import { captureLogs } from "../../helpers/pipeline.js";
import { EVERYTHING, FILESYSTEM, SPAWNER, httpServer, processAlive, startEverythingHttp, stdioServer } from "../../helpers/mcp.js";

const context = (signal = new AbortController().signal): ToolContext => ({
  sessionKey: "console:test", signal, now: Date.now,
  transcript: { get: async () => undefined, search: async () => ({ messages: [], scanned: 0, continueBefore: undefined }) },
  outputs: { read: async () => undefined },
});

const managers: McpManager[] = [];
function manager(servers: Record<string, McpServerConfig>, logs = captureLogs("debug")) {
  const created = new McpManager({ config: { servers }, logger: logs.logger, stopGraceMs: 500 });
  managers.push(created);
  return { manager: created, logs };
}

async function toolsOf(created: McpManager, server: string): Promise<Map<string, Tool>> {
  const [entry] = await created.toolsFor([server]);
  if (!entry || entry.unavailable) throw new Error(`${server} unavailable: ${entry?.unavailable}`);
  return new Map(entry.tools.map((tool) => [tool.definition.function.name, tool]));
}

const logLines = (logs: ReturnType<typeof captureLogs>, msg: string) =>
  logs.lines.join("").split("\n").filter((line) => line.includes(`"msg":"${msg}"`));

const until = async (check: () => boolean, what: string, timeoutMs = 20_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

afterEach(async () => {
  await Promise.all(managers.splice(0).map((created) => created.close()));
});

describe("server-everything over stdio", () => {
  it("offers its tools as server__tool in a stable order, and converts every kind of result", async () => {
    const { manager: created } = manager({ every: stdioServer([EVERYTHING, "stdio"]) });
    const tools = await toolsOf(created, "every");
    const names = [...tools.keys()];
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(["every__echo", "every__get-sum", "every__get-tiny-image", "every__get-structured-content"]));
    const echo = tools.get("every__echo")!;
    expect(echo.definition.function.parameters).toMatchObject({ type: "object", properties: { message: { type: "string" } }, required: ["message"] });
    expect(echo.definition.function.parameters).not.toHaveProperty("$schema");

    expect(await echo.run({ message: "hello" }, context())).toEqual({ text: "Echo: hello" });
    expect(await tools.get("every__get-sum")!.run({ a: 2, b: 40 }, context())).toEqual({ text: "The sum of 2 and 40 is 42." });

    const image = await tools.get("every__get-tiny-image")!.run({}, context());
    expect(typeof image === "object" && image.text).toMatch(/^Here's the image you requested:\n\[image 1: image\/png, [\d.]+ KB\]\nThe image above is the MCP logo\.$/);
    expect(typeof image === "object" && image.images?.[0]?.mimeType).toBe("image/png");

    const structured = await tools.get("every__get-structured-content")!.run({ location: "Chicago" }, context());
    expect(JSON.parse(typeof structured === "object" ? structured.text : "")).toEqual({ temperature: 36, conditions: "Light rain / drizzle", humidity: 82 });

    const failed = await tools.get("every__get-sum")!.run({ a: "two" }, context());
    expect(failed).toMatchObject({ isError: true, text: expect.stringMatching(/^Error from every__get-sum: .*Invalid arguments/) });
  });

  it("offers only what the server's tools filter lets through, and marks the tools that need approval", async () => {
    const { manager: created } = manager({
      every: stdioServer([EVERYTHING, "stdio"], { tools: { include: ["get-*", "echo"], exclude: ["get-env"] }, approval: { tools: ["get-s*"] } }),
    });
    const tools = await toolsOf(created, "every");
    expect([...tools.keys()].every((name) => /^every__(get-|echo)/.test(name))).toBe(true);
    expect(tools.has("every__get-env")).toBe(false);
    expect(tools.has("every__trigger-long-running-operation")).toBe(false);
    expect([...tools.values()].filter((tool) => tool.needsApproval).map((tool) => tool.origin?.tool).sort()).toEqual(["get-structured-content", "get-sum"]);
  });

  it("cancels a long call when the turn's signal aborts", async () => {
    const { manager: created } = manager({ every: stdioServer([EVERYTHING, "stdio"]) });
    const tools = await toolsOf(created, "every");
    const controller = new AbortController();
    const call = tools.get("every__trigger-long-running-operation")!.run({ duration: 600, steps: 2 }, context(controller.signal));
    setTimeout(() => controller.abort("stop"), 200);
    await expect(call).rejects.toThrow();
    // The connection survives a cancelled call.
    expect(await tools.get("every__echo")!.run({ message: "still here" }, context())).toEqual({ text: "Echo: still here" });
  });

  it("a call that outlives timeout_ms is an error result", async () => {
    const { manager: created } = manager({ every: stdioServer([EVERYTHING, "stdio"], { timeout_ms: 300 }) });
    const tools = await toolsOf(created, "every");
    const result = await tools.get("every__trigger-long-running-operation")!.run({ duration: 600, steps: 2 }, context());
    expect(result).toMatchObject({ isError: true, text: expect.stringMatching(/did not answer within/) });
  });

  it("survives the server being killed mid-call: the call is an error result, the next call reconnects", async () => {
    const { manager: created, logs } = manager({ every: stdioServer([EVERYTHING, "stdio"]) });
    const tools = await toolsOf(created, "every");
    const firstPid = created.connection("every")!.pid!;
    const call = tools.get("every__trigger-long-running-operation")!.run({ duration: 600, steps: 2 }, context());
    await new Promise((resolve) => setTimeout(resolve, 200));
    process.kill(firstPid, "SIGKILL");
    expect(await call).toMatchObject({ isError: true, text: expect.stringMatching(/connection to the every server was lost/) });
    expect(logLines(logs, "mcp-server-exited")).toHaveLength(1);
    expect(await tools.get("every__echo")!.run({ message: "again" }, context())).toEqual({ text: "Echo: again" });
    const secondPid = created.connection("every")!.pid!;
    expect(secondPid).not.toBe(firstPid);
    expect(processAlive(firstPid)).toBe(false);
  });
});

describe("server-everything over streamable HTTP", () => {
  let server: Awaited<ReturnType<typeof startEverythingHttp>>;
  beforeAll(async () => {
    server = await startEverythingHttp();
  });
  afterAll(() => server.stop());

  it("calls tools, and recovers a stale session after the server restarts", async () => {
    const { manager: created, logs } = manager({ web: httpServer(server.url, { headers: { "x-test": "1" } }) });
    const tools = await toolsOf(created, "web");
    expect(await tools.get("web__echo")!.run({ message: "over http" }, context())).toEqual({ text: "Echo: over http" });
    expect(await tools.get("web__get-sum")!.run({ a: 1, b: 2 }, context())).toEqual({ text: "The sum of 1 and 2 is 3." });

    await server.restart();
    // The client still holds the old session id, which the new server does not know.
    expect(await tools.get("web__echo")!.run({ message: "after restart" }, context())).toEqual({ text: "Echo: after restart" });
    expect(logLines(logs, "mcp-session-expired-reconnecting")).toHaveLength(1);
  });

  it("a server that is down is an error result, and is reached again once it is back", async () => {
    const { manager: created } = manager({ web: httpServer(server.url) });
    const tools = await toolsOf(created, "web");
    await server.stop();
    expect(await tools.get("web__echo")!.run({ message: "anyone?" }, context())).toMatchObject({ isError: true });
    await server.restart();
    expect(await tools.get("web__echo")!.run({ message: "back" }, context())).toEqual({ text: "Echo: back" });
  });
});

describe("server-filesystem", () => {
  it("reads inside its root; a path outside comes back as an error result", async () => {
    const root = mkdtempSync(join(tmpdir(), "lh-mcp-fs-"));
    writeFileSync(join(root, "notes.txt"), "the answer is 42\n");
    const { manager: created } = manager({ files: stdioServer([FILESYSTEM, root], { tools: { include: ["read_*", "list_*"], exclude: [] } }) });
    const tools = await toolsOf(created, "files");
    expect(tools.has("files__write_file")).toBe(false);
    const read = tools.get("files__read_text_file") ?? tools.get("files__read_file")!;
    expect(await read.run({ path: join(root, "notes.txt") }, context())).toMatchObject({ text: expect.stringContaining("the answer is 42") });
    const outside = await read.run({ path: "/etc/hostname" }, context());
    expect(outside).toMatchObject({ isError: true, text: expect.stringMatching(/Access denied|outside allowed/i) });
  });
});

describe("lifecycle", () => {
  it("stops a server's whole process tree on shutdown, and leaves no orphan when a server dies", async () => {
    const { manager: created } = manager({ spawner: stdioServer([SPAWNER]) });
    const tools = await toolsOf(created, "spawner");
    const helperPid = Number((await tools.get("spawner__helper_pid")!.run({}, context()) as { text: string }).text);
    const serverPid = created.connection("spawner")!.pid!;
    expect(processAlive(helperPid)).toBe(true);
    await created.close();
    expect(processAlive(serverPid)).toBe(false);
    expect(processAlive(helperPid)).toBe(false);

    // A server that dies on its own takes its helper with it too.
    const { manager: second } = manager({ spawner: stdioServer([SPAWNER]) });
    const again = await toolsOf(second, "spawner");
    const secondHelper = Number((await again.get("spawner__helper_pid")!.run({}, context()) as { text: string }).text);
    process.kill(second.connection("spawner")!.pid!, "SIGKILL");
    await until(() => !processAlive(secondHelper), "the helper of a killed server to be stopped");
  });

  it("connects lazily: no server starts before a turn asks for its tools", async () => {
    const { manager: created } = manager({ every: stdioServer([EVERYTHING, "stdio"]) });
    expect(created.connection("every")!.pid).toBeUndefined();
    await created.toolsFor(["every"]);
    expect(created.connection("every")!.pid).toBeGreaterThan(0);
  });

  it("disables a server that keeps crashing, with one warning, and leaves it out meanwhile", async () => {
    const { manager: created, logs } = manager({ broken: stdioServer(["-e", "process.exit(3)"], { connect_timeout_ms: 5_000 }) });
    const outcomes: Array<string | undefined> = [];
    // Reconnects back off (at once, then 1 s): attempts spaced past the backoff reach the server.
    for (let attempt = 0; attempt < 5; attempt++) {
      const [entry] = await created.toolsFor(["broken"]);
      outcomes.push(entry?.unavailable);
      expect(entry?.tools).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
    }
    expect(logLines(logs, "mcp-connect-failed")).toHaveLength(3);
    expect(logLines(logs, "mcp-server-disabled-after-repeated-crashes")).toHaveLength(1);
    expect(outcomes.at(-1)).toMatch(/disabled after repeated crashes/);
    expect(created.connection("broken")!.disabled).toBe(true);
  });
});
