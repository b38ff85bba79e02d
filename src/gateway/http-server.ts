import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Logger } from "../logger.js";

export type RouteHandler = (request: IncomingMessage, response: ServerResponse) => void | Promise<void>;

/**
 * A route written `/console/*` answers every path under `/console/` (the longest such prefix
 * wins); exact paths come first.
 */
function prefixRoute(routes: ReadonlyMap<string, RouteHandler>, path: string): RouteHandler | undefined {
  let found: { length: number; handler: RouteHandler } | undefined;
  for (const [route, handler] of routes) {
    if (!route.endsWith("/*")) continue;
    const prefix = route.slice(0, -1);
    if (path.startsWith(prefix) && (!found || prefix.length > found.length)) found = { length: prefix.length, handler };
  }
  return found?.handler;
}

/** The gateway's HTTP server: /healthz, /metrics, adapter routes (the Telegram webhook), the web console (`/console/*`). */
export async function startHttpServer(options: {
  port: number;
  host?: string;
  routes: ReadonlyMap<string, RouteHandler>;
  logger: Logger;
}): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    const handler = options.routes.get(path) ?? prefixRoute(options.routes, path);
    if (!handler) {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    Promise.resolve(handler(request, response)).catch((error: unknown) => {
      options.logger.error({ err: error, path }, "http-handler-failed");
      if (!response.headersSent) response.writeHead(500, { "content-type": "text/plain" });
      response.end("internal error\n");
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // Loopback unless told otherwise: /metrics and /healthz are not for the internet.
    server.listen(options.port, options.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  return {
    server,
    port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

/**
 * `handler` behind `Authorization: Bearer <token>` (METRICS_TOKEN); no token: the handler as is.
 * Compared as hashes in constant time, so the answer's timing says nothing about the token.
 */
export function requireBearer(token: string | undefined, handler: RouteHandler): RouteHandler {
  if (token === undefined || token === "") return handler;
  const expected = createHash("sha256").update(token).digest();
  return (request, response) => {
    const given = /^Bearer (.+)$/.exec(request.headers.authorization ?? "")?.[1] ?? "";
    if (!timingSafeEqual(createHash("sha256").update(given).digest(), expected)) {
      response.writeHead(401, { "content-type": "text/plain", "www-authenticate": 'Bearer realm="metrics"' }).end("unauthorized\n");
      return;
    }
    return handler(request, response);
  };
}
