/**
 * The console's login limit: after ten wrong tokens from one address within ten minutes, the
 * login answers 429 — to the right token too — without a cookie, and logs it; the window ends
 * and the address may try again. A server of its own: the limit would lock the other console
 * tests' 127.0.0.1 out.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../../config/index.js";
import { ConsoleAuth } from "../../../src/web/auth.js";
import { testConfig, testEnv } from "../../helpers/config.js";
import { captureLogs, type LogCapture } from "../../helpers/pipeline.js";
import { CONSOLE_TOKEN, ConsoleClient, startConsoleServer, type ConsoleServer } from "../../helpers/web-console.js";

describe("web console login limit", () => {
  let config: Config;
  let server: ConsoleServer;
  let logs: LogCapture;

  beforeAll(async () => {
    config = testConfig(testEnv());
    logs = captureLogs("info");
    server = await startConsoleServer(config, logs.logger);
  });
  afterAll(async () => {
    await server.close();
    expect(logs.lines.join("")).not.toContain(CONSOLE_TOKEN);
  });

  it("refuses the eleventh try within the window with 429, even with the right token", async () => {
    const client = new ConsoleClient(server.base);
    for (let attempt = 1; attempt <= 10; attempt++) {
      const wrong = await client.login(`console-SECRET-wrong-${String(attempt).padStart(12, "0")}`);
      expect(wrong.status, `attempt ${attempt}`).toBe(401);
    }
    const throttled = await client.login(`console-SECRET-wrong-${"9".repeat(12)}`);
    expect(throttled.status).toBe(429);
    expect(await throttled.text()).toContain("Too many wrong tokens from this address; try again in a few minutes.");
    const right = await client.login();
    expect(right.status).toBe(429);
    expect(right.headers.get("set-cookie")).toBeNull();
    expect(client.cookie).toBeUndefined();
    const events = logs.lines.map((line) => (JSON.parse(line) as { msg?: string }).msg);
    expect(events.filter((event) => event === "console-login-refused")).toHaveLength(10);
    expect(events.filter((event) => event === "console-login-throttled")).toHaveLength(2);
    expect(events).not.toContain("console-login");
  });

  it("lets the address try again once ten minutes have passed since its first wrong token, and counts per address", async () => {
    const redis = new Redis(config.REDIS_URL!);
    try {
      let now = 1_000_000;
      const auth = new ConsoleAuth({ token: CONSOLE_TOKEN, redis, prefix: config.REDIS_PREFIX, now: () => now });
      for (let attempt = 0; attempt < 10; attempt++) expect(auth.checkToken("10.0.0.1", "wrong-token-0123456789")).toBe(false);
      expect(auth.mayTry("10.0.0.1")).toBe(false);
      expect(auth.mayTry("10.0.0.2")).toBe(true);
      now += 10 * 60_000;
      expect(auth.mayTry("10.0.0.1")).toBe(false);
      now += 1;
      expect(auth.mayTry("10.0.0.1")).toBe(true);
      expect(auth.checkToken("10.0.0.1", CONSOLE_TOKEN)).toBe(true);
      // A new window: one wrong token is one of ten again.
      expect(auth.checkToken("10.0.0.1", "wrong-token-0123456789")).toBe(false);
      expect(auth.mayTry("10.0.0.1")).toBe(true);
    } finally {
      redis.disconnect();
    }
  });
});
