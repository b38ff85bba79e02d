/** METRICS_TOKEN (SPEC §12): a route behind a bearer token, on the real HTTP server. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requireBearer, startHttpServer, type RouteHandler } from "../../../src/gateway/http-server.js";
import { silentLogger } from "../../../src/logger.js";

describe("requireBearer", () => {
  const answer: RouteHandler = (_request, response) => void response.writeHead(200).end("metrics\n");
  let server: Awaited<ReturnType<typeof startHttpServer>>;
  let base: string;
  beforeAll(async () => {
    const routes = new Map([["/guarded", requireBearer("s3cret-metrics", answer)], ["/open", requireBearer(undefined, answer)]]);
    server = await startHttpServer({ port: 0, routes, logger: silentLogger });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => server.close());

  it("answers only the right bearer token; without a token configured the route is open", async () => {
    const status = async (path: string, authorization?: string) => (await fetch(`${base}${path}`, authorization ? { headers: { authorization } } : {})).status;
    expect(await status("/guarded")).toBe(401);
    expect(await status("/guarded", "Bearer s3cret-metric")).toBe(401);
    expect(await status("/guarded", "Basic s3cret-metrics")).toBe(401);
    expect(await status("/guarded", "Bearer s3cret-metrics")).toBe(200);
    expect(await status("/open")).toBe(200);
  });
});
