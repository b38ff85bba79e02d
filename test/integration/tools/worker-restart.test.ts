/**
 * Worker processes with MCP servers: a pending approval survives a worker restart (the answer
 * is taken by a worker that never saw the request), and a worker's shutdown leaves no MCP
 * server process behind — not even a server's own helper process (checked in /proc).
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textOf } from "../../fakes/fake-llm.js";
import { FILESYSTEM, SPAWNER, assertCallsAnswered, processesMatching, writeConfigFile } from "../../helpers/mcp.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { startWorkerFleet, type WorkerFleet } from "../../helpers/worker-fleet.js";

const until = async (check: () => boolean, what: string, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

// Worker processes restarted inside a test, with waits of up to 60 s each: more than the 60 s
// default per test on a loaded 2-core box.
describe("MCP servers in worker processes", { timeout: 240_000 }, () => {
  let fleet: WorkerFleet;
  let root: string;
  const marker = `0.${Math.floor(Math.random() * 1e9)}`;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "lh-restart-"));
    const file = writeConfigFile({
      mcp: {
        servers: {
          files: { command: process.execPath, args: [FILESYSTEM, root], approval: { tools: ["write_file"] } },
          spawner: { command: process.execPath, args: [SPAWNER, marker] },
        },
      },
    });
    fleet = await startWorkerFleet({ LONGHAUL_CONFIG_FILE: file, LOG_LEVEL: "info", APPROVAL_TIMEOUT_S: "600" });
  });
  afterAll(() => fleet.close());

  it("a pending approval is answered after the worker that asked was restarted; shutdown leaves no server process", async () => {
    fleet.llm.setHandler((request) => {
      const messages = request.body.messages;
      if (messages.at(-1)?.role === "tool") return { text: `done: ${messages.filter((message) => message.role === "tool").map((message) => textOf(message.content)).join(" | ")}` };
      return { toolCalls: [{ name: "spawner__helper_pid" }, { name: "files__write_file", arguments: { path: join(root, "after-restart.txt"), content: "survived" } }] };
    });
    const first = fleet.startWorker();
    await fleet.adapter.submit(inbound({ text: "write it", chatId: "restart" }));
    await fleet.adapter.waitFor((sent) => sent.length >= 1, 60_000);
    const request = fleet.adapter.sent[0]!.reply;
    expect(request.actions?.[0]?.label).toBe("Approve");
    // The helper server ran (no approval needed) and started its own process.
    expect(processesMatching(marker).length).toBeGreaterThanOrEqual(2);

    expect(await first.kill("SIGTERM")).toBe(0);
    expect(processesMatching(marker)).toEqual([]);

    const second = fleet.startWorker();
    await fleet.adapter.submit(inbound({ text: "Approve", chatId: "restart", action: { id: request.actions![0]!.id, sourceMessageId: "s1" } }));
    await fleet.adapter.waitFor((sent) => sent.length >= 3, 60_000);
    const [, outcome, answer] = fleet.adapter.sent.map((entry) => entry.reply);
    expect(outcome?.text).toBe("✅ Approved by Ada: ran `files__write_file`.");
    expect(answer?.text).toMatch(/^done: \d+ \| Successfully wrote/);
    expect(readFileSync(join(root, "after-restart.txt"), "utf8")).toBe("survived");
    for (const sent of fleet.llm.requests) assertCallsAnswered(sent);

    // The resumed turn did not need the spawner: only files ran in the second worker.
    await until(() => existsSync(join(root, "after-restart.txt")), "the file");
    expect(await second.kill("SIGTERM")).toBe(0);
    expect(processesMatching(FILESYSTEM).filter((pid) => pid !== process.pid)).toEqual([]);
    expect(processesMatching(marker)).toEqual([]);
  });
});
