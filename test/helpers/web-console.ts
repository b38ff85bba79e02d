/**
 * The web console on a real HTTP server beside a test pipeline, and a small cookie-keeping
 * client that speaks to it as a browser's forms do.
 */
import type { Config } from "../../config/index.js";
import type { OutboundReply, SendOptions } from "../../src/adapters/channel-adapter.js";
import { AccessControl, accessListsFrom } from "../../src/gateway/access.js";
import { startHttpServer, type RouteHandler } from "../../src/gateway/http-server.js";
import type { Logger } from "../../src/logger.js";
import { createProducers, createRedis } from "../../src/queue/index.js";
import { createWebConsole } from "../../src/web/index.js";
import { RecordingAdapter } from "./recording-adapter.js";

export const CONSOLE_TOKEN = "console-SECRET-token-0123456789";

export interface ConsoleServer {
  base: string;
  close(): Promise<void>;
}

export async function startConsoleServer(config: Config, logger: Logger, health: () => Promise<Record<string, boolean>> = async () => ({ redis: true })): Promise<ConsoleServer> {
  const redis = createRedis(config.REDIS_URL!);
  const producers = createProducers(redis, config.REDIS_PREFIX);
  const access = new AccessControl(redis, config.REDIS_PREFIX, accessListsFrom(config));
  const handler = createWebConsole({ config, token: CONSOLE_TOKEN, redis, producers, access, health, logger });
  const routes = new Map<string, RouteHandler>([["/console", handler], ["/console/*", handler]]);
  const http = await startHttpServer({ port: 0, host: "127.0.0.1", routes, logger });
  return {
    base: `http://127.0.0.1:${http.port}`,
    async close() {
      await http.close();
      await producers.close();
      redis.disconnect();
    },
  };
}

/** A browser-like client: keeps the session cookie, posts urlencoded forms with its origin, follows nothing by itself. */
export class ConsoleClient {
  cookie: string | undefined;
  constructor(readonly base: string) {}

  async get(path: string, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${this.base}${path}`, { redirect: "manual", headers: { ...(this.cookie ? { cookie: this.cookie } : {}), ...headers } });
  }

  async post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
    const response = await fetch(`${this.base}${path}`, {
      method: "POST", redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: this.base, ...(this.cookie ? { cookie: this.cookie } : {}), ...headers },
      body: new URLSearchParams(fields).toString(),
    });
    const set = response.headers.get("set-cookie");
    if (set) this.cookie = set.split(";")[0];
    return response;
  }

  async login(token = CONSOLE_TOKEN): Promise<Response> {
    return this.post("/console/login", { token });
  }

  /** The CSRF token of a page's forms. */
  async csrf(path = "/console/operations"): Promise<string> {
    const text = await (await this.get(path)).text();
    const token = /name="csrf" value="([^"]+)"/.exec(text)?.[1];
    if (!token) throw new Error(`no CSRF token on ${path}`);
    return token;
  }
}

/** A console-platform adapter that cannot send replies mentioning "doomed" until repaired: they end as dead letters. */
export class FlakyAdapter extends RecordingAdapter {
  repaired = false;
  constructor() {
    super("console");
  }
  override async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    if (!this.repaired && reply.text.includes("doomed")) throw new TypeError("Cannot read properties of undefined (reading 'length')");
    await super.send(reply, options);
  }
}
