/**
 * Webhook mode: the adapter's route mounted on a node:http server (standing in for the
 * gateway's), Telegram's side played by the fake posting updates with the secret header.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Update } from "grammy/types";
import type { InboundMessage, IngressPort, SubmitResult } from "../../../src/adapters/channel-adapter.js";
import { TELEGRAM_WEBHOOK_PATH, TelegramAdapter } from "../../../src/adapters/telegram/index.js";
import { silentLogger, type Logger } from "../../../src/logger.js";
import { captureLogs } from "../../helpers/pipeline.js";
import { FAKE_BOT, FAKE_TOKEN, FakeTelegram } from "../../fakes/fake-telegram.js";

const SECRET = "webhook-secret_123";

class RecordingIngress implements IngressPort {
  readonly submissions: Array<{ message: InboundMessage; resolvedAt?: number }> = [];
  constructor(private readonly answer: (message: InboundMessage) => SubmitResult | Promise<SubmitResult> = () => ({ status: "accepted" })) {}
  async submit(message: InboundMessage): Promise<SubmitResult> {
    const entry: { message: InboundMessage; resolvedAt?: number } = { message };
    this.submissions.push(entry);
    const result = await this.answer(message);
    entry.resolvedAt = Date.now();
    return result;
  }
}

let fake: FakeTelegram;
let adapter: TelegramAdapter | undefined;
let gateway: Server | undefined;

async function startWebhook(ingress: IngressPort, options: { webhookCheckIntervalMs?: number; submitAttemptTimeoutMs?: number; logger?: Logger } = {}): Promise<string> {
  fake = await FakeTelegram.start();
  gateway = createServer((request, response) => {
    const route = adapter?.httpRoutes?.get(request.url ?? "");
    if (route) route(request, response);
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => gateway?.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}${TELEGRAM_WEBHOOK_PATH}`;
  adapter = new TelegramAdapter({
    token: FAKE_TOKEN,
    apiRoot: fake.apiRoot,
    webhookUrl: url,
    webhookSecret: SECRET,
    maxMessageChars: 16_000,
    logger: silentLogger,
    botInfo: FAKE_BOT,
    ...options,
  });
  await adapter.start(ingress);
  return url;
}

const dm = (updateId: number, messageId: number, text: string): Update => ({
  update_id: updateId,
  message: {
    message_id: messageId,
    date: Math.floor(Date.now() / 1000),
    chat: { id: 5012345678, type: "private", first_name: "Ada" },
    from: { id: 5012345678, is_bot: false, first_name: "Ada" },
    text,
  },
});

afterEach(async () => {
  await adapter?.stop();
  adapter = undefined;
  if (gateway) {
    gateway.closeAllConnections();
    await new Promise((resolve) => gateway?.close(resolve));
    gateway = undefined;
  }
  await fake?.close();
});

describe("telegram adapter, webhook mode", () => {
  it("sets the webhook with its secret on start and does not poll", async () => {
    const url = await startWebhook(new RecordingIngress());
    const [call] = fake.callsOf("setWebhook");
    expect(call?.payload).toEqual({ url, secret_token: SECRET, allowed_updates: ["message", "callback_query", "my_chat_member"], drop_pending_updates: false });
    expect([...(adapter?.httpRoutes?.keys() ?? [])]).toEqual([TELEGRAM_WEBHOOK_PATH]);
    expect(adapter?.isConnected()).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(fake.callsOf("getUpdates")).toHaveLength(0);
    expect(fake.callsOf("deleteWebhook")).toHaveLength(0);
  });

  it("rejects a wrong or missing secret with 401 and submits nothing", async () => {
    const ingress = new RecordingIngress();
    const url = await startWebhook(ingress);
    expect((await fake.postWebhook(url, dm(1, 10, "let me in"), "guess")).status).toBe(401);
    expect((await fake.postWebhook(url, dm(2, 11, "let me in"))).status).toBe(401);
    expect(ingress.submissions).toHaveLength(0);
  });

  it("accepts the right secret and acknowledges only once the message is durable", async () => {
    const ingress = new RecordingIngress(async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return { status: "accepted" };
    });
    const url = await startWebhook(ingress);
    const response = await fake.postWebhook(url, dm(3, 12, "hello from a webhook"), SECRET);
    const answeredAt = Date.now();
    expect(response.status).toBe(200);
    expect(ingress.submissions.map((entry) => entry.message.text)).toEqual(["hello from a webhook"]);
    expect(ingress.submissions[0]?.resolvedAt).toBeLessThanOrEqual(answeredAt);
  });

  it("answers 500 when the ingress fails, so Telegram re-delivers; the re-delivery goes through", async () => {
    let failing = true;
    const ingress = new RecordingIngress(() => {
      if (failing) throw new Error("redis unavailable");
      return { status: "accepted" };
    });
    const url = await startWebhook(ingress);
    const update = dm(4, 13, "important");
    expect((await fake.postWebhook(url, update, SECRET)).status).toBe(500);
    failing = false;
    expect((await fake.postWebhook(url, update, SECRET)).status).toBe(200);
    expect(ingress.submissions.map((entry) => entry.message.messageId)).toEqual(["13", "13"]);
  });

  it("answers 500 with a log line naming the chat and message when the store never answers (issue 28 item 9); the re-delivery is stored", async () => {
    const logs = captureLogs("warn");
    let calls = 0;
    // The first store hangs as on a frozen or half-open Redis connection.
    const ingress = new RecordingIngress(() => (++calls === 1 ? new Promise<SubmitResult>(() => undefined) : { status: "accepted" }));
    const url = await startWebhook(ingress, { submitAttemptTimeoutMs: 200, logger: logs.logger });
    const update = dm(10, 19, "frozen store");
    const answered = await Promise.race([
      fake.postWebhook(url, update, SECRET).then((response) => response.status),
      new Promise<string>((resolve) => setTimeout(() => resolve("no answer within 5 s"), 5_000)),
    ]);
    expect(answered).toBe(500);
    const line = logs.lines.map((text) => JSON.parse(text) as Record<string, unknown>).find((entry) => String(entry.msg).includes("not stored; answered 500"));
    expect(line).toMatchObject({ chatId: "5012345678", messageId: "19", sessionKey: "tg:5012345678" });
    expect((await fake.postWebhook(url, update, SECRET)).status).toBe(200);
    expect(ingress.submissions.map((entry) => entry.message.messageId)).toEqual(["19", "19"]);
  });

  it("passes a re-delivered update on with the same message id and sends nothing for the duplicate", async () => {
    const seen = new Set<string>();
    const ingress = new RecordingIngress((message) => {
      const duplicate = seen.has(message.messageId);
      seen.add(message.messageId);
      return { status: duplicate ? "duplicate" : "accepted" };
    });
    const url = await startWebhook(ingress);
    const update = dm(5, 14, "once");
    expect((await fake.postWebhook(url, update, SECRET)).status).toBe(200);
    expect((await fake.postWebhook(url, update, SECRET)).status).toBe(200);
    expect(ingress.submissions.map((entry) => entry.message.messageId)).toEqual(["14", "14"]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(fake.callsOf("sendMessage")).toHaveLength(0);
  });

  it("acknowledges a denied message at once and sends the notice on its own", async () => {
    const ingress = new RecordingIngress(() => ({ status: "denied", notice: "This bot is private. Pairing code: `AB12`" }));
    const url = await startWebhook(ingress);
    expect((await fake.postWebhook(url, dm(6, 15, "hi"), SECRET)).status).toBe(200);
    const notice = await fake.waitForCall("sendMessage");
    expect(notice.payload).toMatchObject({ chat_id: "5012345678", text: "This bot is private. Pairing code: <code>AB12</code>" });
  });

  it("skips an update it cannot read with 200, so Telegram does not re-deliver it forever", async () => {
    const ingress = new RecordingIngress();
    const url = await startWebhook(ingress);
    const update = dm(8, 17, "/help");
    const broken = { ...update, message: { ...update.message, entities: "not a list" } } as unknown as Update;
    expect((await fake.postWebhook(url, broken, SECRET)).status).toBe(200);
    expect((await fake.postWebhook(url, dm(9, 18, "next"), SECRET)).status).toBe(200);
    expect(ingress.submissions.map((entry) => entry.message.text)).toEqual(["next"]);
  });

  it("answers 400 to a body that is not JSON and 503 once stopped", async () => {
    const url = await startWebhook(new RecordingIngress());
    const response = await fetch(url, { method: "POST", headers: { "x-telegram-bot-api-secret-token": SECRET }, body: "{not json" });
    expect(response.status).toBe(400);
    await adapter?.stop();
    expect((await fake.postWebhook(url, dm(7, 16, "late"), SECRET)).status).toBe(503);
  });

  it("refuses a webhook URL without a secret", () => {
    expect(
      () => new TelegramAdapter({ token: FAKE_TOKEN, webhookUrl: "https://bot.example.com/telegram/webhook", maxMessageChars: 100, logger: silentLogger }),
    ).toThrow(/TELEGRAM_WEBHOOK_SECRET/);
  });
  it("reports itself unhealthy while getWebhookInfo shows Telegram failing to reach it, and well once updates arrive", async () => {
    const url = await startWebhook(new RecordingIngress(), { webhookCheckIntervalMs: 50 });
    expect(adapter?.isConnected()).toBe(true);
    fake.failWebhookDelivery("Connection refused", Date.now() + 1000);
    await vi.waitUntil(() => adapter?.isConnected() === false, { timeout: 5000 });
    // Telegram gets through again: an update arrives after its last error.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await fake.postWebhook(url, dm(9, 9, "back"), SECRET)).status).toBe(200);
    await vi.waitUntil(() => adapter?.isConnected() === true, { timeout: 5000 });
    // Someone pointed the webhook elsewhere.
    fake.setWebhookElsewhere("https://elsewhere.example.com/hook");
    await vi.waitUntil(() => adapter?.isConnected() === false, { timeout: 5000 });
  });
});
