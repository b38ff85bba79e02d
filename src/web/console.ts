/**
 * The operator's web console under /console (off unless CONSOLE_WEB_TOKEN is set): login, the
 * Sessions, a session's timeline, Usage and Operations pages, and the actions of src/operator.
 * Server-rendered HTML, usable without JavaScript (the timeline's plots aside); served by the
 * gateway's HTTP server, so it binds where /healthz does (HTTP_HOST, loopback by default).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Redis } from "ioredis";
import type { Config } from "../../config/index.js";
import type { AccessControl } from "../gateway/access.js";
import type { RouteHandler } from "../gateway/http-server.js";
import type { Logger } from "../logger.js";
import { approvePairing, denyPairing, dropDeadLetter, retryDeadLetter } from "../operator/index.js";
import type { Producers } from "../queue/index.js";
import { asset } from "./assets.js";
import { clearedCookie, ConsoleAuth, csrfMatches, sameOrigin, sessionCookie, type ConsoleSession } from "./auth.js";
import { html, page } from "./html.js";
import { loadOperations, renderOperations } from "./operations-page.js";
import { parseQuery, renderSessions, selectRows, SessionIndex } from "./sessions-page.js";
import { loadTimeline, renderTimeline } from "./timeline-page.js";
import { loadUsage, PERIODS_DAYS, renderUsage } from "./usage-page.js";

export interface WebConsoleOptions {
  config: Config;
  /** CONSOLE_WEB_TOKEN. */
  token: string;
  redis: Redis;
  producers: Producers;
  access: AccessControl;
  /** This process's components (Redis, adapters, worker) → up? */
  health(): Promise<Record<string, boolean>>;
  logger: Logger;
  now?: () => number;
}

/** Largest form body read (a code, a session key and an id are a few hundred bytes). */
const MAX_FORM_BYTES = 16 * 1024;

const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  // Not no-referrer: Chromium then sends `Origin: null` on the console's own form posts, which the origin check refuses.
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
};

export function createWebConsole(options: WebConsoleOptions): RouteHandler {
  const { config, redis, logger } = options;
  const prefix = config.REDIS_PREFIX;
  const now = options.now ?? Date.now;
  const log = logger.child({ component: "web-console" });
  const auth = new ConsoleAuth({ token: options.token, redis, prefix, now });
  const sessions = new SessionIndex(redis, prefix, now);
  const deadLetterDeps = { redis, prefix, logger: log, enqueueDelivery: (sessionKey: string, platform: Parameters<Producers["enqueueDelivery"]>[1]) => options.producers.enqueueDelivery(sessionKey, platform) };
  const pairingDeps = { access: options.access, logger: log };

  const send = (response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
    response.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...SECURITY_HEADERS, ...headers }).end(body);
  };
  const redirect = (response: ServerResponse, location: string, headers: Record<string, string> = {}) => {
    response.writeHead(303, { location, "cache-control": "no-store", ...SECURITY_HEADERS, ...headers }).end();
  };
  const loginPage = (response: ServerResponse, status: number, error?: string) => send(response, status, page({
    title: "Log in",
    body: html`<form method="post" action="/console/login" class="login">
  ${error ? html`<p class="error" role="alert" id="login-error">${error}</p>` : ""}
  <label for="token">Console token</label>
  <input id="token" name="token" type="password" autocomplete="current-password" required autofocus${html` `}${error ? html`aria-describedby="login-error"` : ""}>
  <button type="submit">Log in</button>
  <p class="id">The token is CONSOLE_WEB_TOKEN of this deployment.</p>
</form>`,
  }));
  const address = (request: IncomingMessage) => request.socket.remoteAddress ?? "unknown";

  async function handlePost(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    if (!sameOrigin(request)) {
      log.warn({ path, address: address(request) }, "console-cross-origin-refused");
      send(response, 403, page({ title: "Refused", body: html`<p class="error">This form came from another site.</p>` }));
      return;
    }
    const form = await readForm(request);
    if (path === "/console/login") {
      if (!auth.mayTry(address(request))) {
        log.warn({ address: address(request) }, "console-login-throttled");
        loginPage(response, 429, "Too many wrong tokens from this address; try again in a few minutes.");
        return;
      }
      if (!auth.checkToken(address(request), form?.get("token") ?? "")) {
        log.warn({ address: address(request) }, "console-login-refused");
        loginPage(response, 401, "That token is not right.");
        return;
      }
      const { id, session } = await auth.createSession(`console:${address(request)}`);
      log.info({ operator: session.operator }, "console-login");
      redirect(response, "/console/sessions", { "set-cookie": sessionCookie(request, id) });
      return;
    }
    const session = await auth.sessionOf(request);
    if (!session) {
      redirect(response, "/console/login");
      return;
    }
    if (!form || !csrfMatches(session, form.get("csrf") ?? undefined)) {
      log.warn({ path, operator: session.operator }, "console-csrf-refused");
      send(response, 403, page({ title: "Refused", body: html`<p class="error">The form's security token did not match; reload the page and try again.</p>` }));
      return;
    }
    if (path === "/console/logout") {
      await auth.endSession(request);
      log.info({ operator: session.operator }, "console-logout");
      redirect(response, "/console/login", { "set-cookie": clearedCookie(request) });
      return;
    }
    const notice = await runAction(path, form, session);
    if (notice === undefined) {
      send(response, 404, page({ title: "Not found", body: html`<p>No such action.</p>` }));
      return;
    }
    sessions.invalidate();
    redirect(response, `/console/operations?notice=${encodeURIComponent(notice)}`);
  }

  async function runAction(path: string, form: URLSearchParams, session: ConsoleSession): Promise<string | undefined> {
    const operator = session.operator;
    switch (path) {
      case "/console/pairing/approve": {
        const request = await approvePairing(pairingDeps, operator, form.get("code") ?? "");
        return request ? `Approved ${request.userName} (${request.platform} user ${request.userId}). They can talk to the bot now.` : "No pending pairing request with that code (codes expire after an hour).";
      }
      case "/console/pairing/deny": {
        const request = await denyPairing(pairingDeps, operator, form.get("code") ?? "");
        return request ? `Denied ${request.userName} (${request.platform} user ${request.userId}).` : "No pending pairing request with that code.";
      }
      case "/console/dead-letters/retry": {
        const letter = await retryDeadLetter(deadLetterDeps, operator, form.get("session") ?? "", form.get("id") ?? "");
        return letter ? `Dead letter ${letter.id} of ${letter.sessionKey} is back in its outbox.` : "No such dead letter (already retried or dropped?).";
      }
      case "/console/dead-letters/drop": {
        const letter = await dropDeadLetter(deadLetterDeps, operator, form.get("session") ?? "", form.get("id") ?? "");
        return letter ? `Dropped dead letter ${letter.id} of ${letter.sessionKey}.` : "No such dead letter (already retried or dropped?).";
      }
      default:
        return undefined;
    }
  }

  async function handleGet(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname;
    if (path.startsWith("/console/assets/")) {
      const found = await asset(path.slice("/console/assets/".length));
      if (!found) {
        response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
        return;
      }
      response.writeHead(200, { "content-type": found.type, "cache-control": "max-age=3600", "x-content-type-options": "nosniff" }).end(found.body);
      return;
    }
    if (path === "/console/login") {
      if (await auth.sessionOf(request)) redirect(response, "/console/sessions");
      else loginPage(response, 200);
      return;
    }
    const session = await auth.sessionOf(request);
    if (!session) {
      redirect(response, "/console/login");
      return;
    }
    const at = now();
    if (path === "/console" || path === "/console/" || path === "/console/sessions") {
      const query = parseQuery(url.searchParams);
      const selection = selectRows(await sessions.rows(), query);
      send(response, 200, page({ title: "Sessions", section: "sessions", csrf: session.csrf, body: renderSessions(selection, query, at) }));
      return;
    }
    if (path.startsWith("/console/sessions/")) {
      let sessionKey: string;
      try {
        sessionKey = decodeURIComponent(path.slice("/console/sessions/".length));
      } catch {
        sessionKey = "";
      }
      const data = sessionKey === "" ? undefined : await loadTimeline(redis, prefix, sessionKey);
      if (!data) {
        send(response, 404, page({ title: "No such session", section: "sessions", csrf: session.csrf, body: html`<p>No session ${sessionKey}. <a href="/console/sessions">All sessions</a></p>` }));
        return;
      }
      log.info({ operator: session.operator, sessionKey }, "console-session-viewed");
      send(response, 200, page({
        title: `Session ${sessionKey}`, section: "sessions", csrf: session.csrf, body: renderTimeline(sessionKey, data),
        scripts: ["/console/assets/uplot.js", "/console/assets/timeline.js"], stylesheets: ["/console/assets/uplot.css"],
      }));
      return;
    }
    if (path === "/console/usage") {
      const days = PERIODS_DAYS.find((candidate) => String(candidate) === url.searchParams.get("days")) ?? 14;
      const kind = (["chat", "user", "model"] as const).find((candidate) => url.searchParams.has(candidate));
      const owner = kind ? { kind, id: url.searchParams.get(kind) ?? "" } : undefined;
      const data = await loadUsage(redis, config, at, days, owner);
      send(response, 200, page({ title: "Usage", section: "usage", csrf: session.csrf, body: renderUsage(data, { days, ...(owner ? { owner } : {}) }) }));
      return;
    }
    if (path === "/console/operations") {
      const data = await loadOperations({ redis, prefix, access: options.access, producers: options.producers, health: options.health, now: at });
      const notice = url.searchParams.get("notice")?.slice(0, 300);
      send(response, 200, page({ title: "Operations", section: "operations", csrf: session.csrf, body: renderOperations(data, { csrf: session.csrf, now: at, ...(notice ? { notice } : {}) }) }));
      return;
    }
    send(response, 404, page({ title: "Not found", csrf: session.csrf, body: html`<p>Nothing here. <a href="/console/sessions">Sessions</a></p>` }));
  }

  return async (request, response) => {
    const url = new URL(request.url ?? "/", "http://console.invalid");
    if (request.method === "POST") return handlePost(request, response, url.pathname);
    if (request.method === "GET" || request.method === "HEAD") return handleGet(request, response, url);
    response.writeHead(405, { allow: "GET, POST", "content-type": "text/plain" }).end("method not allowed\n");
  };
}

/** The urlencoded form of a POST, or undefined when it is too large or of another type. */
async function readForm(request: IncomingMessage): Promise<URLSearchParams | undefined> {
  const type = request.headers["content-type"] ?? "";
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  if (!type.startsWith("application/x-www-form-urlencoded")) return undefined;
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}
