import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { spawnApp, type AppProcess } from "../helpers/app-process.js";
import { testEnv } from "../helpers/config.js";
import { freePort, startRedisServer } from "../helpers/redis-server.js";

describe("/healthz and /metrics", () => {
  let llm: FakeLlm;
  let app: AppProcess;
  let base: string;
  let port: number;

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.setHandler(() => ({ text: "fine", usage: { prompt_tokens: 120, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 64 } } }));
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = spawnApp(testEnv({ LLM_BASE_URL: llm.url, HTTP_PORT: String(port), METRICS_TOKEN: "metrics-SECRET-token", CONSOLE: "on", CONSOLE_EXIT_ON_EOF: "false", LOG_LEVEL: "info" }));
    await app.waitForStderr(/longhaul-ready/);
  });
  afterAll(async () => {
    await app.kill("SIGTERM");
    await llm.close();
  });

  it("reports healthy with Redis and the adapters up", async () => {
    const response = await fetch(`${base}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: "ok", role: "all", checks: { redis: true, console: true } });
  });

  it("with METRICS_TOKEN, /metrics refuses a request without the bearer token or with another (401); /healthz stays open", async () => {
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    const wrong = await fetch(`${base}/metrics`, { headers: { authorization: "Bearer metrics-SECRET-tokem" } });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).not.toContain("longhaul_");
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it("exports Prometheus metrics: turns, latency, tokens, queue depth", async () => {
    app.child.stdin.write("how are you?\n");
    await app.waitForStdoutLines(1);
    const text = await (await fetch(`${base}/metrics`, { headers: { authorization: "Bearer metrics-SECRET-token" } })).text();
    expect(text).toMatch(/^longhaul_turns_total\{outcome="answered"\} 1$/m);
    expect(text).toMatch(/^longhaul_turn_duration_seconds_count 1$/m);
    expect(text).toMatch(/^longhaul_llm_tokens_total\{kind="input",role="main"\} 120$/m);
    expect(text).toMatch(/^longhaul_llm_tokens_total\{kind="cached",role="main"\} 64$/m);
    expect(text).toMatch(/^longhaul_queue_depth\{queue="turns"\} 0$/m);
    expect(text).toMatch(/^longhaul_replies_delivered_total\{platform="console"\} 1$/m);
    expect(text).toMatch(/^longhaul_inbound_messages_total\{platform="console",result="accepted"\} 1$/m);
  });

  it("listens on loopback only unless HTTP_HOST says otherwise", async () => {
    expect(app.stderr()).toMatch(/"httpHost":"127\.0\.0\.1".*longhaul-ready/);
    const external = Object.values(networkInterfaces()).flat().find((address) => address?.family === "IPv4" && !address.internal);
    // On a machine with a network interface, that address must refuse the connection.
    if (external) await expect(fetch(`http://${external.address}:${port}/healthz`)).rejects.toThrow();
  });

  it("answers 404 elsewhere", async () => {
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    // No CONSOLE_WEB_TOKEN: no web console at all.
    expect((await fetch(`${base}/console/login`)).status).toBe(404);
    expect((await fetch(`${base}/console`)).status).toBe(404);
  });
});

describe("/healthz while Redis is down", () => {
  it("reports unhealthy (503) and recovers when Redis is back", async () => {
    const redis = await startRedisServer({ appendOnly: true });
    const llm = await startFakeLlm();
    const port = await freePort();
    const app = spawnApp(testEnv({ REDIS_URL: redis.url, LLM_BASE_URL: llm.url, HTTP_PORT: String(port), LONGHAUL_ROLE: "worker", LOG_LEVEL: "info" }));
    const health = async () => {
      const response = await fetch(`http://127.0.0.1:${port}/healthz`);
      return { status: response.status, body: (await response.json()) as { checks: Record<string, boolean> } };
    };
    try {
      await app.waitForStderr(/longhaul-ready/);
      expect((await health()).status).toBe(200);
      await redis.stop();
      const down = await health();
      expect(down.status).toBe(503);
      expect(down.body.checks.redis).toBe(false);
      await redis.start();
      const deadline = Date.now() + 20_000;
      let status = 0;
      while (Date.now() < deadline && (status = (await health()).status) !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
      expect(status).toBe(200);
    } finally {
      await app.kill("SIGTERM");
      await llm.close();
      await redis.dispose();
    }
  });
});
