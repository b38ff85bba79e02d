/**
 * The test Redis helpers under a port race: a redis-server whose port was taken between
 * freePort() and its spawn exits at once; the helper says so at once (not after 10 s) and the
 * first start takes another port. CI's full suite once failed on exactly this in a Cluster test
 * ("redis-server did not listen on 36579 within 10000 ms").
 */
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { freeClusterPort, freePort, ServerExitedError, waitForPort } from "../../helpers/redis-server.js";

let blocker: Server | undefined;
afterEach(() => blocker?.close());

describe("test redis helpers", () => {
  it("waitForPort gives up as soon as the server exits before listening", async () => {
    const port = await freePort();
    // A cluster node whose bus port (port + 10000) is taken, or past 65535, exits at once.
    if (port + 10_000 <= 65_535) {
      blocker = createServer();
      await new Promise<void>((resolve) => blocker!.listen(port + 10_000, "127.0.0.1", resolve));
    }
    const child = spawn("redis-server", [
      "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
      "--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`, "--dir", tmpdir(),
    ], { stdio: "ignore" });
    // A wait far past the test's own timeout: only noticing the exit can settle it in time.
    await expect(waitForPort(port, 3_600_000, child)).rejects.toBeInstanceOf(ServerExitedError);
    expect(child.exitCode).not.toBe(0);
  });

  it("a cluster port leaves room for its bus port (port + 10000), and that one is free", async () => {
    for (let i = 0; i < 20; i++) {
      const port = await freeClusterPort();
      expect(port + 10_000).toBeLessThanOrEqual(65_535);
      const bus = createServer();
      await new Promise<void>((resolve, reject) => {
        bus.once("error", reject);
        bus.listen(port + 10_000, "127.0.0.1", resolve);
      });
      await new Promise((resolve) => bus.close(resolve));
    }
  });
});
