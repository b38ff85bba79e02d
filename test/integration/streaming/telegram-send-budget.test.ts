/**
 * One send budget per bot (issue 30 item 3) through the real grammY client and the fake Bot API,
 * which enforces Telegram's flood limits (1 message/s per chat after a burst, 20 a minute per
 * group, 30/s overall) and gives a chat that keeps sending through its retry_after a 120 s
 * penalty. Many private chats, or many groups, stream answers at once: every final arrives
 * alone (no status left beside it), none is refused, the previews give way; and a chat under a
 * long penalty holds up nobody else's final.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { lastUserText } from "../../fakes/fake-llm.js";
import { closeChecked, FAKE_BOT, mentionOf, sleep, startTelegramE2e, waitUntil, warmUpTokenizer, type TelegramE2e } from "../../helpers/telegram-pipeline.js";
import { metricValue, testRedisAddress } from "../../helpers/pipeline.js";
import { TEST_TELEGRAM_TOKEN } from "../../helpers/config.js";
import { RedisSendBudget } from "../../../src/gateway/send-budget.js";
import { silentLogger } from "../../../src/logger.js";
import { createRedis } from "../../../src/queue/index.js";

let e2e: TelegramE2e | undefined;
beforeAll(() => warmUpTokenizer());
afterEach(async () => {
  await closeChecked(e2e);
  e2e = undefined;
});

const CHATS = 50;
const userIds = Array.from({ length: CHATS }, (_, index) => 810_000_000 + index);
const groupIds = Array.from({ length: CHATS }, (_, index) => -1_001_700_000_000 - index);
const answerFor = (question: string) => `${question}: ${Array.from({ length: 30 }, (_, index) => `w${index}`).join(" ")}`;
const isFinal = (payload: Record<string, unknown>) => payload.parse_mode === "HTML";

describe("telegram: one send budget per bot", () => {
  it(`${CHATS} chats streaming at once: every final delivered, none refused, previews degrade`, async () => {
    e2e = await startTelegramE2e({
      env: { ALLOWED_TELEGRAM_USERS: userIds.join(","), STREAMING: "partial", WORKER_CONCURRENCY: String(CHATS), TYPING_DELAY_MS: "0" },
    });
    const { telegram, llm, adapter } = e2e;
    llm.setHandler((request) => ({ text: answerFor(lastUserText(request)), tokensPerSecond: 15 }));
    for (const id of userIds) telegram.pushMessage({ chat: { id, type: "private", first_name: "U" }, from: { id, is_bot: false, first_name: "U" }, text: `q${id}` });

    const finalsIn = (id: number) => telegram.delivered(id).filter((call) => isFinal(call.payload));
    await waitUntil(() => userIds.every((id) => finalsIn(id).length === 1), `every chat's final (so far ${userIds.filter((id) => finalsIn(id).length > 0).length})`, 120_000);
    await sleep(1_000);
    // A status whose create was answered late (past its 5 s deadline, on a loaded machine) is
    // deleted when that answer comes: wait for the creates still unanswered.
    await waitUntil(() => userIds.every((id) => telegram.chatView(id).length === 1), `every chat down to its final (statuses left in ${userIds.filter((id) => telegram.chatView(id).length > 1).length})`, 70_000);
    for (const id of userIds) {
      // The answer, once, alone (no status left beside it), and the only message that notified.
      expect(telegram.chatView(id).map((message) => message.text)).toEqual([answerFor(`q${id}`)]);
      expect(telegram.notifications(id).map((call) => call.visible?.text)).toEqual([answerFor(`q${id}`)]);
    }
    // No final was ever answered 429, and nobody earned a penalty.
    expect(telegram.rateLimited().filter((call) => isFinal(call.payload))).toEqual([]);
    expect(telegram.penalties).toEqual([]);
    // The previews gave way: the budget skipped some (counted), so fewer were shown than streamed.
    expect(adapter.budgetRefusals.preview).toBeGreaterThan(0);
    expect(adapter.budgetRefusals.final).toBe(0);
  }, 240_000);

  it(`${CHATS} busy groups streaming at once through one bot (20 a minute per group, 30/s overall): every final delivered alone, none refused, no penalty, previews degrade`, async () => {
    e2e = await startTelegramE2e({
      env: { ALLOWED_TELEGRAM_CHATS: groupIds.join(","), STREAMING: "partial", WORKER_CONCURRENCY: String(CHATS), TYPING_DELAY_MS: "0" },
    });
    const { telegram, llm, adapter } = e2e;
    expect(telegram.limits).toMatchObject({ groupPerMinute: 20, globalPerSecond: 30 });
    llm.setHandler((request) => ({ text: answerFor(/\bg\d+\b/.exec(lastUserText(request))?.[0] ?? "unknown"), tokensPerSecond: 15 }));
    groupIds.forEach((id, index) => {
      const text = `@${FAKE_BOT.username} g${index}`;
      telegram.pushMessage({ chat: { id, type: "supergroup", title: `Busy ${index}` }, from: { id: 820_000_000 + index, is_bot: false, first_name: "M" }, text, entities: mentionOf(text) });
    });

    const finalsIn = (id: number) => telegram.delivered(id).filter((call) => isFinal(call.payload));
    await waitUntil(() => groupIds.every((id) => finalsIn(id).length === 1), `every group's final (so far ${groupIds.filter((id) => finalsIn(id).length > 0).length})`, 150_000);
    await waitUntil(() => groupIds.every((id) => telegram.chatView(id).length === 1), `every group down to its final (statuses left in ${groupIds.filter((id) => telegram.chatView(id).length > 1).length})`, 70_000);
    await sleep(1_000);
    groupIds.forEach((id, index) => {
      expect(telegram.chatView(id).map((message) => message.text)).toEqual([answerFor(`g${index}`)]);
      expect(telegram.notifications(id).map((call) => call.visible?.text)).toEqual([answerFor(`g${index}`)]);
      // Within the group's 20 a minute (every counted call: status, edits, the final).
      const counted = telegram.calls.filter((call) => String(call.payload.chat_id) === String(id) && /^(send|edit)/.test(call.method) && call.method !== "sendChatAction" && call.retryAfter === undefined);
      expect(counted.length).toBeLessThanOrEqual(20);
    });
    expect(telegram.rateLimited().filter((call) => isFinal(call.payload))).toEqual([]);
    expect(telegram.penalties).toEqual([]);
    expect(adapter.budgetRefusals.preview).toBeGreaterThan(0);
    expect(adapter.budgetRefusals.final).toBe(0);
  }, 240_000);

  it("a chat under a 120 s penalty holds up no other chat's final, and is not sent to while it lasts", async () => {
    const [penalized, other] = [userIds[0]!, userIds[1]!];
    e2e = await startTelegramE2e({ env: { ALLOWED_TELEGRAM_USERS: `${penalized},${other}`, STREAMING: "partial", TYPING_DELAY_MS: "0" } });
    const { telegram, llm } = e2e;
    llm.setHandler((request) => ({ text: answerFor(lastUserText(request)), tokensPerSecond: 20 }));
    telegram.penalize(penalized, 120);
    telegram.pushMessage({ chat: { id: penalized, type: "private", first_name: "P" }, from: { id: penalized, is_bot: false, first_name: "P" }, text: "first" });
    telegram.pushMessage({ chat: { id: other, type: "private", first_name: "O" }, from: { id: other, is_bot: false, first_name: "O" }, text: "second" });

    await waitUntil(() => telegram.delivered(other).some((call) => isFinal(call.payload)), "the other chat's final");
    await sleep(2_000);
    expect(telegram.chatView(other).map((message) => message.text)).toEqual([answerFor("second")]);
    // The penalized chat was told once and then left alone: no request of ours extended the penalty.
    const toPenalized = telegram.calls.filter((call) => String(call.payload.chat_id) === String(penalized) && call.method !== "sendChatAction");
    expect(toPenalized.length).toBe(1);
    expect(telegram.rateLimited(penalized)).toHaveLength(1);
    expect(telegram.penalties).toEqual([{ chatId: String(penalized), at: expect.any(Number), seconds: 120 }]);
    expect(telegram.chatView(penalized)).toEqual([]);
  }, 60_000);

  it("/metrics counts what the budget held back: a chat it holds for 60 s gets its final handed back (counted as final), its typing and previews skipped", async () => {
    const [held, other] = [userIds[2]!, userIds[3]!];
    e2e = await startTelegramE2e({ env: { ALLOWED_TELEGRAM_USERS: `${held},${other}`, STREAMING: "partial", TYPING_DELAY_MS: "0" } });
    const { telegram, llm, pipeline, config } = e2e;
    llm.setHandler((request) => ({ text: answerFor(lastUserText(request)), tokensPerSecond: 20 }));
    // Another gateway of this bot was told to wait 60 s in `held` (a 429 it recorded in the shared budget).
    const redis = createRedis(testRedisAddress(config));
    try {
      await new RedisSendBudget({ redis, prefix: config.REDIS_PREFIX, logger: silentLogger }).penalize({ platform: "telegram", bot: TEST_TELEGRAM_TOKEN.split(":")[0]!, chat: String(held), retryAfterMs: 60_000 });
    } finally {
      redis.disconnect();
    }
    telegram.pushMessage({ chat: { id: held, type: "private", first_name: "H" }, from: { id: held, is_bot: false, first_name: "H" }, text: "first" });
    telegram.pushMessage({ chat: { id: other, type: "private", first_name: "O" }, from: { id: other, is_bot: false, first_name: "O" }, text: "second" });

    const refused = (priority: string) => metricValue(pipeline.metrics, "longhaul_send_budget_refusals_total", { platform: "telegram", priority });
    await waitUntil(() => telegram.delivered(other).some((call) => isFinal(call.payload)), "the other chat's final");
    await expect.poll(() => refused("final"), { timeout: 30_000 }).toBeGreaterThan(0);
    // Nothing reached the held chat: each of its calls was refused here and counted by priority.
    expect(telegram.calls.filter((call) => String(call.payload.chat_id) === String(held))).toEqual([]);
    for (const priority of ["final", "notice", "preview", "typing"] as const) expect(await refused(priority)).toBe(e2e.adapter.budgetRefusals[priority]);
    expect(await refused("typing")).toBeGreaterThan(0);
  }, 60_000);
});
