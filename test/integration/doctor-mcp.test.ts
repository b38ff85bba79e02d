/**
 * `npm run doctor` with MCP servers configured (mcp.servers in the config file), as an operator
 * runs it: a real server from npm (server-everything over stdio), one that exits at once, one
 * that never answers, and an HTTP server nobody runs. One line per server; each failure names
 * the server, why, and the fix; exit code 6 when one fails.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_CODES } from "../../src/doctor/check.js";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { spawnApp } from "../helpers/app-process.js";
import { testEnv } from "../helpers/config.js";
import { EVERYTHING, stdioServer, httpServer, writeConfigFile } from "../helpers/mcp.js";
import { freePort, startRedisServer, type RedisServerHandle } from "../helpers/redis-server.js";

async function doctor(env: Record<string, string>): Promise<{ code: number | null; lines: string[] }> {
  const cli = spawnApp(env, { entry: "src/cli/doctor.ts" });
  const code = await cli.exited();
  return { code, lines: cli.stdout().split("\n").filter((line) => /^(ok|WARN|FAIL|skip) /.test(line)) };
}

describe("npm run doctor: MCP servers", () => {
  let llm: FakeLlm;
  let redis: RedisServerHandle;
  beforeAll(async () => {
    redis = await startRedisServer({ appendOnly: true });
    llm = await startFakeLlm();
  });
  afterAll(async () => {
    await llm.close();
    await redis.dispose();
  });

  it("connects to a working server and lists its tools: ok, exit 0", async () => {
    const file = writeConfigFile({ mcp: { servers: { everything: stdioServer([EVERYTHING, "stdio"]) } } });
    const { code, lines } = await doctor(testEnv({ REDIS_URL: redis.url, LLM_BASE_URL: llm.url, LONGHAUL_CONFIG_FILE: file }));
    const mcp = lines.filter((line) => /^\S+\s+mcp /.test(line));
    expect(mcp).toHaveLength(1);
    expect(mcp[0]).toMatch(/^ok {4}mcp {7}server "everything" \(stdio: \S*node\): \d+ tools$/);
    expect(Number(/(\d+) tools/.exec(mcp[0]!)?.[1])).toBeGreaterThan(5);
    expect(code).toBe(EXIT_CODES.ok);
  });

  it("a server that exits, one that never answers, one nobody runs: one FAIL line each with the fix, exit 6", async () => {
    const port = await freePort();
    const file = writeConfigFile({
      mcp: {
        servers: {
          everything: stdioServer([EVERYTHING, "stdio"]),
          crashes: stdioServer(["-e", "process.stderr.write('no such database\\n'); process.exit(3)"]),
          silent: stdioServer(["-e", "setInterval(() => {}, 1000)"], { connect_timeout_ms: 1_500 }),
          remote: httpServer(`http://127.0.0.1:${port}/mcp`, { headers: { Authorization: "Bearer SECRET-mcp-token" } }),
        },
      },
    });
    const { code, lines } = await doctor(testEnv({ REDIS_URL: redis.url, LLM_BASE_URL: llm.url, LONGHAUL_CONFIG_FILE: file }));
    const mcp = lines.filter((line) => /^\S+\s+mcp /.test(line));
    expect(mcp).toHaveLength(4);
    expect(mcp.filter((line) => line.startsWith("ok"))).toEqual([expect.stringMatching(/server "everything"/)]);
    const failed = (name: string) => mcp.find((line) => line.startsWith("FAIL") && line.includes(`server "${name}"`));
    expect(failed("crashes")).toMatch(/did not list its tools: .+ → fix: check mcp\.servers\.crashes\.command, args and cwd/);
    expect(failed("silent")).toMatch(/did not list its tools: no answer within 1\.5 s → fix: check mcp\.servers\.silent\.command/);
    expect(failed("remote")).toMatch(new RegExp(`server "remote" \\(http: 127\\.0\\.0\\.1:${port}\\) did not list its tools: .+ → fix: check that the server at mcp\\.servers\\.remote\\.url is running`));
    expect(lines.join("\n")).not.toContain("SECRET-mcp-token");
    expect(code).toBe(EXIT_CODES.mcp);
  });
});
