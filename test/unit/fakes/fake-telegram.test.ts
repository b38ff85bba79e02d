/** The fake Bot API behaves as Telegram does where our code meets it (checked over HTTP, no grammY). */
import { afterEach, describe, expect, it } from "vitest";
import { TELEGRAM_COMMANDS } from "../../../src/adapters/telegram/index.js";
import { FakeTelegram } from "../../fakes/fake-telegram.js";

let fake: FakeTelegram | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function call(method: string, payload: Record<string, unknown> = {}): Promise<{ status: number; body: { ok: boolean; result?: unknown; description?: string; parameters?: Record<string, number> } }> {
  const response = await fetch(`${fake?.apiRoot}/bot${fake?.token}/${method}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(payload) });
  return { status: response.status, body: (await response.json()) as never };
}

describe("fake Telegram Bot API", () => {
  it("rate-limits a chat after a short burst, with retry_after", async () => {
    fake = await FakeTelegram.start();
    const statuses: number[] = [];
    for (let index = 0; index < 5; index++) statuses.push((await call("sendMessage", { chat_id: 1, text: `m${index}` })).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const limited = await call("sendMessage", { chat_id: 1, text: "again" });
    expect(limited.body.parameters?.retry_after).toBeGreaterThanOrEqual(1);
    // Another chat is not held up.
    expect((await call("sendMessage", { chat_id: 2, text: "other" })).status).toBe(200);
  });

  it("gives a chat that keeps sending through its retry_after a long penalty, and only that chat", async () => {
    fake = await FakeTelegram.start();
    for (let index = 0; index < 3; index++) expect((await call("sendMessage", { chat_id: 1, text: `m${index}` })).status).toBe(200);
    const told = await call("sendMessage", { chat_id: 1, text: "too soon" });
    expect(told.body.parameters?.retry_after).toBe(1);
    // Sent anyway, inside the retry_after: the third such request earns 120 s.
    const answers = [];
    for (let index = 0; index < 3; index++) answers.push((await call("sendMessage", { chat_id: 1, text: `again${index}` })).body.parameters?.retry_after);
    expect(answers).toEqual([1, 1, 120]);
    expect(fake.penalties).toMatchObject([{ chatId: "1", seconds: 120 }]);
    expect(fake.rateLimited(1)).toHaveLength(4);
    expect((await call("sendMessage", { chat_id: 2, text: "other" })).status).toBe(200);
    // The penalty holds after the short wait has passed.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await call("sendMessage", { chat_id: 1, text: "later" })).body.parameters?.retry_after).toBeGreaterThan(100);
  });

  it("refills a chat's bucket at 1 message/s and caps a group at 20 in any minute", async () => {
    fake = await FakeTelegram.start({ rateLimits: { burst: 3, perChatPerSecond: 20, groupPerMinute: 20, globalPerSecond: 1000 } });
    const statuses: number[] = [];
    for (let index = 0; index < 21; index++) {
      statuses.push((await call("sendMessage", { chat_id: -100, text: `g${index}` })).status);
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(20);
    expect(statuses[20]).toBe(429);
  });

  it("answers 409 to a poller while a webhook is set, and to a poller whose request another one replaced", async () => {
    fake = await FakeTelegram.start();
    const waiting = call("getUpdates", { timeout: 5 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const newer = call("getUpdates", { timeout: 0 });
    expect((await waiting).status).toBe(409);
    expect((await newer).status).toBe(200);
    await call("setWebhook", { url: "https://example.com/hook" });
    expect((await call("getUpdates")).body.description).toMatch(/webhook is active/);
    expect(((await call("getWebhookInfo")).body.result as { url: string }).url).toBe("https://example.com/hook");
  });

  it("refuses a setMyCommands list Telegram would refuse, and takes ours", async () => {
    fake = await FakeTelegram.start();
    const description = (commands: unknown) => call("setMyCommands", { commands }).then((answer) => answer.body.description ?? "ok");
    expect(await description(TELEGRAM_COMMANDS)).toBe("ok");
    expect(await call("setMyCommands", { commands: TELEGRAM_COMMANDS, scope: { type: "all_group_chats" } }).then((answer) => answer.body.description ?? "ok")).toBe("ok");
    expect(await call("setMyCommands", { commands: TELEGRAM_COMMANDS, scope: { type: "chat" } }).then((answer) => answer.body.description)).toBe("Bad Request: chat_id is empty");
    expect(await call("setMyCommands", { commands: TELEGRAM_COMMANDS, scope: { type: "everyone" } }).then((answer) => answer.body.description)).toBe("Bad Request: unsupported bot command scope type");
    expect(await description([{ command: "timeZone", description: "upper case" }])).toBe("Bad Request: BOT_COMMAND_INVALID");
    expect(await description([{ command: "x".repeat(33), description: "too long" }])).toBe("Bad Request: BOT_COMMAND_INVALID");
    expect(await description([{ command: "tz", description: " " }])).toBe("Bad Request: BOT_COMMAND_DESCRIPTION_INVALID");
    expect(await description([{ command: "tz", description: "d".repeat(257) }])).toBe("Bad Request: BOT_COMMAND_DESCRIPTION_INVALID");
    expect(await description(Array.from({ length: 101 }, (_, index) => ({ command: `c${index}`, description: "many" })))).toBe("Bad Request: BOT_COMMANDS_TOO_MUCH");
  });

  it("refuses the old id of a migrated group with migrate_to_chat_id", async () => {
    fake = await FakeTelegram.start();
    fake.migrateChat(-5, -1005);
    const refused = await call("sendMessage", { chat_id: -5, text: "hi" });
    expect(refused).toMatchObject({ status: 400, body: { description: "Bad Request: group chat was upgraded to a supergroup chat", parameters: { migrate_to_chat_id: -1005 } } });
    expect((await call("sendMessage", { chat_id: -1005, text: "hi" })).status).toBe(200);
  });

  it("serves files through getFile and the download route, only with the token", async () => {
    fake = await FakeTelegram.start();
    fake.addFile("f1", "file body", "documents/a.txt");
    const file = (await call("getFile", { file_id: "f1" })).body.result as { file_path: string; file_size: number };
    expect(file).toMatchObject({ file_path: "documents/a.txt", file_size: 9 });
    expect(await (await fetch(`${fake.apiRoot}/file/bot${fake.token}/${file.file_path}`)).text()).toBe("file body");
    expect((await fetch(`${fake.apiRoot}/file/botwrong/${file.file_path}`)).status).toBe(404);
    expect((await call("getFile", { file_id: "nope" })).status).toBe(400);
  });
});
