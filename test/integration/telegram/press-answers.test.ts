import { afterEach, describe, expect, it } from "vitest";
import type { InboundMessage, IngressPort, OutboundReply, SubmitResult } from "../../../src/adapters/channel-adapter.js";
import { TelegramAdapter } from "../../../src/adapters/telegram/index.js";
import { silentLogger } from "../../../src/logger.js";
import { FAKE_BOT, FAKE_TOKEN, FakeTelegram } from "../../fakes/fake-telegram.js";

/**
 * The wrong person's press on an approval button (issue 30, Deliver 5): the answer meant for
 * them alone never reaches the group, even when the press is no longer held (the worker took
 * longer than the hold, or another gateway holds it).
 */

class RecordingIngress implements IngressPort {
  readonly submissions: InboundMessage[] = [];
  async submit(message: InboundMessage): Promise<SubmitResult> {
    this.submissions.push(message);
    return { status: "accepted" };
  }
}

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

const GROUP = { id: -1001987654321, type: "supergroup" as const, title: "Compiler nerds" };
const GRACE = { id: 6111222333, is_bot: false, first_name: "Grace", last_name: "Hopper" };
const target = { platform: "telegram" as const, chatId: String(GROUP.id) };
const reply = (text: string, extra: Partial<OutboundReply> = {}): OutboundReply => ({ replyId: `${GROUP.id}#${text.length}`, sessionKey: `tg:${GROUP.id}`, target, text, inReplyTo: [], kind: "notice", ...extra });

let fake: FakeTelegram | undefined;
let adapter: TelegramAdapter | undefined;

afterEach(async () => {
  await adapter?.stop();
  await fake?.close();
  adapter = undefined;
  fake = undefined;
});

describe("telegram: a private answer to a press that is no longer held", () => {
  it("is not sent to the group (the press was already answered plainly when its hold ran out)", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress();
    adapter = new TelegramAdapter({ token: FAKE_TOKEN, apiRoot: fake.apiRoot, maxMessageChars: 16_000, logger: silentLogger, botInfo: FAKE_BOT, pollingTimeoutSeconds: 1, pressAnswerHoldMs: 20 });
    await adapter.start(ingress);
    await adapter.send(reply("Allow files__write_file?", { actions: [{ id: "approve", label: "Approve" }] }), { fromPart: 0, onPartSent: async () => undefined });
    const request = fake.callsOf("sendMessage")[0];
    const messageId = [...fake.botMessages.values()].find((message) => message.chat.id === GROUP.id)?.message_id ?? 0;
    const keyboard = request?.payload.reply_markup as { inline_keyboard: Array<Array<{ callback_data: string }>> };
    fake.pushCallbackQuery(GRACE, GROUP.id, messageId, keyboard.inline_keyboard[0]?.[0]?.callback_data ?? "");
    await waitUntil(() => ingress.submissions.length === 1 && fake!.callsOf("answerCallbackQuery").length === 1);

    const parts: number[] = [];
    await adapter.send(reply("Only Ada Lovelace, who asked, or an admin can answer this request.", { inReplyTo: [ingress.submissions[0]?.messageId ?? ""], private: true }), { fromPart: 0, onPartSent: async (index) => void parts.push(index) });
    expect(fake.callsOf("sendMessage")).toHaveLength(1);
    expect(parts).toEqual([0]);
  });
});

describe("telegram: a press the ingress turns away", () => {
  class TurningAwayIngress implements IngressPort {
    constructor(private readonly result: SubmitResult) {}
    async submit(): Promise<SubmitResult> {
      return this.result;
    }
  }

  async function press(result: SubmitResult, chat: { id: number; type: "supergroup" | "private" }): Promise<FakeTelegram> {
    const telegram = (fake = await FakeTelegram.start());
    adapter = new TelegramAdapter({ token: FAKE_TOKEN, apiRoot: telegram.apiRoot, maxMessageChars: 16_000, logger: silentLogger, botInfo: FAKE_BOT, pollingTimeoutSeconds: 1 });
    await adapter.start(new TurningAwayIngress(result));
    const to = { platform: "telegram" as const, chatId: String(chat.id) };
    await adapter.send(reply("Allow files__write_file?", { target: to, actions: [{ id: "approve", label: "Approve" }] }), { fromPart: 0, onPartSent: async () => undefined });
    const messageId = [...telegram.botMessages.values()].find((message) => message.chat.id === chat.id)?.message_id ?? 0;
    const keyboard = telegram.callsOf("sendMessage")[0]?.payload.reply_markup as { inline_keyboard: Array<Array<{ callback_data: string }>> };
    telegram.pushCallbackQuery(GRACE, chat.id, messageId, keyboard.inline_keyboard[0]?.[0]?.callback_data ?? "");
    await waitUntil(() => telegram.callsOf("answerCallbackQuery").length === 1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return telegram;
  }

  for (const result of [{ status: "denied", notice: "You are not on this bot's list; ask its admin." }, { status: "rate-limited", notice: "Slow down: try again in a minute." }] as const) {
    it(`${result.status} in a group: the notice is an alert to the presser alone, never a group message`, async () => {
      const telegram = await press(result, GROUP);
      expect(telegram.callsOf("answerCallbackQuery")[0]?.payload).toMatchObject({ text: result.notice, show_alert: true });
      expect(telegram.callsOf("sendMessage")).toHaveLength(1);
    });
  }

  for (const result of [{ status: "denied" }, { status: "rate-limited" }] as const) {
    it(`${result.status} without a notice (told once already): the press is answered plainly, never "please try again"`, async () => {
      const telegram = await press(result, GROUP);
      expect(telegram.callsOf("answerCallbackQuery")[0]?.payload.text).toBeUndefined();
      expect(telegram.callsOf("sendMessage")).toHaveLength(1);
    });
  }

  it("denied in a private chat: the notice (pairing instructions can be long) comes as a message there", async () => {
    const notice = `To use this bot, send /start and give the admin this code: ${"X".repeat(220)}`;
    const telegram = await press({ status: "denied", notice }, { id: GRACE.id, type: "private" });
    const sent = telegram.callsOf("sendMessage").map((call) => String(call.payload.text));
    expect(sent).toHaveLength(2);
    expect(sent[1]).toContain("give the admin this code");
  });
});
