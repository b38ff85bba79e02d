/**
 * A Telegram group upgraded to a supergroup while its session's turn runs, through the real
 * pipeline (ingress, BullMQ, worker, delivery): the move stops the running turn instead of
 * racing it, the question is answered once, in the supergroup, by the moved session; a message
 * that still reaches the old session afterwards is forwarded and answered there too.
 */
import { describe, expect, it } from "vitest";
import { startFakeLlm, withoutStamp } from "../../fakes/fake-llm.js";
import { createRedis } from "../../../src/queue/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline } from "../../helpers/pipeline.js";
import { closeAfterTest } from "../../helpers/close-after-test.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

const OLD = { chatId: "-4001", sessionKey: "tg:-4001" };
const NEW = { chatId: "-1004001", sessionKey: "tg:-1004001" };
const groupMessage = (messageId: string, text: string) =>
  inbound({ platform: "telegram", chatType: "group", chatId: OLD.chatId, sessionKey: OLD.sessionKey, messageId, text });

describe("a supergroup migration while the group's turn runs", () => {
  it("stops the running turn, moves its question with the session, and answers it once in the supergroup", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const config = testConfig({ LLM_BASE_URL: llm.url, ALLOWED_TELEGRAM_CHATS: OLD.chatId });
    const adapter = new RecordingAdapter("telegram");
    const pipeline = closeAfterTest(await startPipeline(config, [adapter]));
    const gate = llm.hold();
    await adapter.submit(groupMessage("1", "question before the upgrade"));
    await llm.waitForRequests(1);

    // The turn is waiting on the model: the move must not race it.
    const moved = await pipeline.gateway.ingress.moveChat({ platform: "telegram", fromChatId: OLD.chatId, toChatId: NEW.chatId, fromSessionKey: OLD.sessionKey, toSessionKey: NEW.sessionKey });
    expect(moved).toBe("moved");
    gate.release();
    await adapter.waitFor((sent) => sent.length === 1);
    await adapter.submit(groupMessage("2", "late re-delivery to the old chat"));
    await adapter.waitFor((sent) => sent.length === 2);
    // Nothing more comes (the stopped turn's answer never does).
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    expect(adapter.sent.map((entry) => [entry.reply.sessionKey, entry.reply.target.chatId, entry.reply.text])).toEqual([
      [NEW.sessionKey, NEW.chatId, "echo: Ada: question before the upgrade"],
      [NEW.sessionKey, NEW.chatId, "echo: Ada: late re-delivery to the old chat"],
    ]);
    const redis = createRedis(config.REDIS_URL!);
    try {
      const store = new SessionStore(redis, config.REDIS_PREFIX);
      expect((await store.readTranscript(NEW.sessionKey)).filter((message) => message.role === "user").map((message) => withoutStamp(message.content ?? ""))).toEqual([
        "Ada: question before the upgrade", "Ada: late re-delivery to the old chat",
      ]);
      expect(await store.transcriptLength(OLD.sessionKey)).toBe(0);
      expect(await store.inboxLength(OLD.sessionKey)).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});
