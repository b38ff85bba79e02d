/**
 * longhaul's entry point, and the only place the configuration is loaded.
 * LONGHAUL_ROLE=all (default) runs the gateway and a worker in one process; `gateway` and
 * `worker` run one side, so many workers on many machines can share one Redis.
 */
import { ConfigError, loadConfig, type Config, withSecretsFile } from "../config/index.js";
import type { WorkerRole } from "../workers/worker-role.js";
import { StartupRefusedError } from "./doctor/check.js";
import { assertModelConfigured } from "./doctor/settings.js";
import type { Gateway } from "./gateway/gateway.js";
import type { RouteHandler } from "./gateway/http-server.js";
import { tuneHeap } from "./heap.js";

async function main(): Promise<void> {
  // Before the first large allocations (the token encoder, the adapters' caches).
  tuneHeap();
  let config: Config;
  try {
    config = loadConfig(withSecretsFile(process.env));
    assertModelConfigured(config);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`longhaul: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  // The rest is loaded once the settings are known to be usable, so a refusal comes at once
  // (`npm start` compiles every module it loads).
  const [
    { startWorkerRole }, { createAdapters }, { checkBeforeStart }, { redisLookupOf, resolveRedis },
    { startGateway }, { startHttpServer, requireBearer }, { createMetrics }, { createProcessIo },
  ] = await Promise.all([
    import("../workers/worker-role.js"), import("./adapters/index.js"), import("./doctor/startup.js"), import("./embedded-redis.js"),
    import("./gateway/gateway.js"), import("./gateway/http-server.js"), import("./metrics.js"), import("./process-io.js"),
  ]);
  const { logger, terminal } = createProcessIo(config);
  const metrics = createMetrics();
  const redis = await resolveRedis({ ...redisLookupOf(config), logger });
  await checkBeforeStart({ config, redis, logger });
  logger.info({ role: config.LONGHAUL_ROLE, model: config.LLM_MODEL, busyMode: config.BUSY_MODE }, "longhaul-starting");

  let gateway: Gateway | undefined;
  let worker: WorkerRole | undefined;
  let http: Awaited<ReturnType<typeof startHttpServer>> | undefined;
  let webConsole: { close(): Promise<void> } | undefined;
  let shuttingDown: Promise<void> | undefined;

  const shutdown = (reason: string, exitCode = 0): Promise<void> => {
    shuttingDown ??= (async () => {
      logger.info({ reason }, "shutdown-started");
      // Below a container's usual 30 s grace period, so we exit on our own terms. A reply part
      // still waiting for the platform's answer is recorded as sent first (at most 1 s more):
      // its outcome is unknown, and such a part is never sent again (docs/architecture.md,
      // "Shutdown"); so is a part answered whose record has not been stored yet.
      setTimeout(() => {
        logger.error("shutdown-timed-out");
        const recorded = gateway?.recordPartsInFlight() ?? Promise.resolve();
        void Promise.race([recorded, new Promise((resolve) => setTimeout(resolve, 1_000))]).finally(() => {
          logger.flush();
          process.exit(1);
        });
      }, config.SHUTDOWN_TIMEOUT_MS).unref();
      try {
        // Intake first; then the workers, whose hand-back clock must not wait behind delivery;
        // then delivery, which sends what the workers committed on their way out.
        await gateway?.stopIntake();
        await worker?.close();
        await gateway?.close();
        await http?.close();
        await webConsole?.close();
        await redis.stop();
        logger.info("shutdown-finished");
      } catch (error) {
        logger.error({ err: error }, "shutdown-failed");
        exitCode = 1;
      }
      logger.flush();
      process.exit(exitCode);
    })();
    return shuttingDown;
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));

  // The HTTP server comes first: a webhook registered while the gateway starts must find it.
  const routes = new Map<string, RouteHandler>();
  routes.set("/healthz", async (_request, response) => {
    const checks = { ...(await worker?.health()), ...(await gateway?.health()) };
    const healthy = shuttingDown === undefined && Object.values(checks).every(Boolean);
    response.writeHead(healthy ? 200 : 503, { "content-type": "application/json" })
      .end(JSON.stringify({ status: healthy ? "ok" : "unhealthy", role: config.LONGHAUL_ROLE, checks }));
  });
  routes.set("/metrics", requireBearer(config.METRICS_TOKEN, async (_request, response) => {
    await gateway?.refreshQueueDepth().catch(() => undefined);
    response.writeHead(200, { "content-type": metrics.registry.contentType }).end(await metrics.registry.metrics());
  }));
  if (config.HTTP_PORT > 0) http = await startHttpServer({ port: config.HTTP_PORT, host: config.HTTP_HOST, routes, logger });
  // The operator's web console, only with its token (docs/operator.md, "Web console").
  if (http && config.CONSOLE_WEB_TOKEN) {
    const { startWebConsole } = await import("./web/index.js");
    const started = startWebConsole({
      config, token: config.CONSOLE_WEB_TOKEN, redisAddress: redis.address, logger,
      health: async () => ({ ...(await worker?.health()), ...(await gateway?.health()) }),
    });
    webConsole = started;
    routes.set("/console", started.handler);
    routes.set("/console/*", started.handler);
  } else if (config.CONSOLE_WEB_TOKEN) logger.warn("web-console-off: CONSOLE_WEB_TOKEN is set but HTTP_PORT is 0 (no HTTP server)");

  // Test-only faults for the fault tests; never set in a deployment.
  const testHooks = process.env.LONGHAUL_TEST_HOOKS === "1";
  if (config.LONGHAUL_ROLE !== "gateway") worker = await startWorkerRole({ config, redisAddress: redis.address, logger, metrics, testHooks });
  if (config.LONGHAUL_ROLE !== "worker") {
    const adapters = createAdapters(config, logger, {
      onConsoleDrained: () => void shutdown("console-input-ended"),
      onConsoleQuit: () => void shutdown("console-quit"),
      ...(terminal ? { terminal } : {}),
      // Intake cannot recover by itself (a 409 that did not clear): exit non-zero so the
      // supervisor (compose `restart:`) starts a fresh gateway.
      onFatal: (platform, error) => void shutdown(`${platform}-intake-failed: ${error.message}`, 1),
    });
    gateway = await startGateway({ config, redisAddress: redis.address, adapters, logger, metrics });
    for (const [path, handler] of gateway.routes) routes.set(path, handler);
  }
  logger.info({ httpPort: http?.port, httpHost: http ? config.HTTP_HOST : undefined }, "longhaul-ready");
}

main().catch((error: unknown) => {
  if (error instanceof StartupRefusedError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(error.exitCode);
  }
  process.stderr.write(`longhaul: failed to start: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  process.exit(1);
});
