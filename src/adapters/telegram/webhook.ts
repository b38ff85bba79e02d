/**
 * Webhook mode's HTTP handling and health. An update is acknowledged (2xx) only once the
 * ingress stored it: until then Telegram keeps it and re-delivers, so nothing is confirmed
 * unstored. Health follows getWebhookInfo: when Telegram's latest attempt to reach us failed
 * (`last_error_date` newer than the last update we received) or the webhook points elsewhere,
 * /healthz says so, with Telegram's own error message in the log.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Api } from "grammy";
import type { Logger } from "../../logger.js";
import { describeError, toApiSignal } from "./send-reply.js";

export type WebhookCallback = (request: IncomingMessage, response: ServerResponse) => Promise<unknown>;

export function serveWebhook(callback: WebhookCallback, request: IncomingMessage, response: ServerResponse, running: boolean, logger: Logger): void {
  if (!running) {
    // Shutting down: Telegram retries, reaching a replica that is still up.
    response.writeHead(503).end();
    return;
  }
  callback(request, response).catch((error: unknown) => {
    const malformed = error instanceof SyntaxError;
    logger[malformed ? "warn" : "error"]({ err: describeError(error) }, malformed ? "webhook body is not JSON" : "webhook update not accepted; Telegram will re-deliver it");
    if (!response.headersSent) response.writeHead(malformed ? 400 : 500);
    if (!response.writableEnded) response.end();
  });
}

export class WebhookHealth {
  healthy = true;
  private lastUpdateAt = Date.now();
  private lastReported = "";
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: { api: Api; url: string; intervalMs: number; logger: Logger; signal: AbortSignal }) {}

  /** An update arrived: Telegram reaches us. */
  received(): void {
    this.lastUpdateAt = Date.now();
  }

  start(): void {
    this.timer = setInterval(() => void this.check(), this.options.intervalMs);
    this.timer.unref();
    void this.check();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async check(): Promise<void> {
    const { api, logger } = this.options;
    try {
      const info = await api.getWebhookInfo(toApiSignal(this.options.signal));
      const failingSince = info.last_error_date === undefined ? 0 : info.last_error_date * 1000;
      const url = info.url ?? "";
      const problem = url !== this.options.url
        ? `the webhook now points elsewhere (${hostOf(url)}); another deployment or a poller changed it`
        : failingSince > this.lastUpdateAt
          ? `Telegram cannot reach this webhook: ${info.last_error_message ?? "unknown error"} (${info.pending_update_count} updates waiting)`
          : "";
      this.healthy = problem === "";
      if (problem !== this.lastReported) {
        if (problem) logger.warn({ pendingUpdates: info.pending_update_count }, problem);
        else logger.info("telegram reaches the webhook again");
        this.lastReported = problem;
      }
    } catch (error) {
      if (!this.options.signal.aborted) logger.debug({ err: describeError(error) }, "getWebhookInfo failed");
    }
  }
}

/** Only the host of a URL goes to the log: a webhook path may hold a secret. */
export function hostOf(url: string): string {
  try {
    return url === "" ? "none" : new URL(url).host;
  } catch {
    return "unparseable URL";
  }
}
