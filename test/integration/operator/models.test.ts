import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, systemText, type FakeLlm } from "../../fakes/fake-llm.js";
import { isFlushRequest, isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { testConfig, testEnv } from "../../helpers/config.js";
import { writeConfigFile } from "../../helpers/config-file.js";
import { captureLogs, startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

const CONFIG = `
models:
  default: mini
  list:
    mini: { id: gpt-4o-mini, context_window: 128000, prices: { input: 0.15, output: 0.6 } }
    big: { id: gpt-4.1, context_window: 1000000, aliases: [smart], vision: true }
    tiny: { id: tiny-model, context_window: 4096 }
    secret: { id: secret-model, allow: { users: ["tg:7"] } }
personas:
  pirate: "Answer like a friendly pirate."
`;

describe("model catalogue and personas", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let env: Record<string, string>;
  const adapter = new RecordingAdapter("telegram");
  let count = 0;

  /** Sends one message and returns the reply it got. */
  const say = async (text: string, who: { userId?: string; chatId?: string; group?: boolean } = {}) => {
    const userId = who.userId ?? "1";
    const chatId = who.chatId ?? userId;
    const expected = adapter.sent.length + 1;
    await adapter.submit(inbound({
      platform: "telegram", chatId, sessionKey: `tg:${chatId}`, userId, userName: `user${userId}`,
      chatType: who.group ? "group" : "private", text, messageId: `m${++count}`,
    }));
    await adapter.waitFor((sent) => sent.length >= expected);
    return adapter.sent[expected - 1]!.reply.text;
  };
  const mainRequests = () => llm.requests.filter((request) => !isSummarizerRequest(request) && !isFlushRequest(request));

  const start = () => startPipeline(testConfig(env), [adapter], { logs: captureLogs("info") });

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.route(isSummarizerRequest, { text: "## Goal\nChat about boats." });
    env = testEnv({
      LLM_BASE_URL: llm.url,
      LONGHAUL_CONFIG_FILE: writeConfigFile(CONFIG),
      ALLOWED_TELEGRAM_USERS: "1,2,7",
      ALLOWED_TELEGRAM_CHATS: "-100",
      ADMIN_TELEGRAM_USERS: "2",
    });
    pipeline = await start();
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });

  it("/model lists the models this chat may use, with the current one", async () => {
    const listing = await say("/model");
    expect(listing).toMatch(/^Current model: mini \(gpt-4o-mini\)$/m);
    expect(listing).toMatch(/^• mini — gpt-4o-mini, 128K context, \$0\.15\/\$0\.6 per 1M in\/out \[default, current\]$/m);
    expect(listing).toMatch(/^• big \(also: smart\) — gpt-4\.1, 1M context, images$/m);
    expect(listing).not.toContain("secret");
    expect(await say("/model", { userId: "7" })).toMatch(/^• secret — secret-model/m);
  });

  it("refuses unknown models and models this chat may not use", async () => {
    expect(await say("/model nope")).toBe('There is no model "nope". Send /model to see the choices.');
    expect(await say("/model secret")).toBe("The model secret is not available in this chat.");
    await say("hello");
    expect(mainRequests().at(-1)!.body.model).toBe("gpt-4o-mini");
  });

  it("applies a switch on the very next request, confirms the model that answered, and keeps it across a restart", async () => {
    expect(await say("/model smart")).toBe("This chat now uses big (gpt-4.1, 1M context, images), from the next message on.");
    const before = mainRequests().length;
    const reply = await say("what now?");
    expect(mainRequests()).toHaveLength(before + 1);
    expect(mainRequests().at(-1)!.body.model).toBe("gpt-4.1");
    expect(reply).toBe("echo: what now?\n\n(answered by gpt-4.1)");
    // Confirmed once.
    expect(await say("again")).toBe("echo: again");
    // /status names the catalogue's model and the id it is sent as.
    expect(await say("/status")).toMatch(/^Model: big \(gpt-4\.1\)$/m);

    await pipeline.close();
    pipeline = await start();
    await say("after the restart");
    expect(mainRequests().at(-1)!.body.model).toBe("gpt-4.1");
    expect(await say("/model")).toMatch(/^Current model: big \(gpt-4\.1\)$/m);

    expect(await say("/model default")).toBe("This chat is back to the default model: mini (gpt-4o-mini, 128K context, $0.15/$0.6 per 1M in/out).");
    await say("and back");
    expect(mainRequests().at(-1)!.body.model).toBe("gpt-4o-mini");
    expect(await say("/status")).toMatch(/^Model: mini \(gpt-4o-mini\)$/m);
  });

  it("a switch to a smaller window compacts the conversation before the next request", async () => {
    const chat = { userId: "1", chatId: "1" };
    await say("/new", chat);
    // About 5,000 tokens: far below mini's thresholds, above 85% of tiny's 4,096.
    for (let index = 0; index < 5; index++) await say(`boat note ${index}: ${"the hull needs paint and the mast a new rope ".repeat(90)}`, chat);
    expect(llm.requests.filter(isSummarizerRequest)).toHaveLength(0);
    await say("/model tiny", chat);
    const seen = llm.requests.length;
    await say("so what about the boat?", chat);
    // The memory flush may go first (to the new model); then the fold, then the answer.
    const sent = llm.requests.slice(seen).filter((request) => !isFlushRequest(request));
    expect(isSummarizerRequest(sent[0]!)).toBe(true);
    expect(sent[0]!.body.model).toBe("tiny-model");
    const main = sent.filter((request) => !isSummarizerRequest(request));
    expect(main).toHaveLength(1);
    expect(main[0]!.body.model).toBe("tiny-model");
    expect(JSON.stringify(main[0]!.body.messages)).toContain("Chat about boats.");
  });

  it("in a group only admins may switch the model", async () => {
    expect(await say("/model big", { userId: "1", chatId: "-100", group: true })).toBe("Only an admin can change the model of a group.");
    expect(await say("/model big", { userId: "2", chatId: "-100", group: true })).toMatch(/^This chat now uses big/);
    await say("hi all", { userId: "1", chatId: "-100", group: true });
    expect(mainRequests().at(-1)!.body.model).toBe("gpt-4.1");
  });

  it("/persona sets a named or custom persona in the system prompt; admins only in groups", async () => {
    const chat = { userId: "1", chatId: "1" };
    expect(await say("/persona pirate", chat)).toBe("Persona set: pirate.");
    await say("ahoy", chat);
    expect(systemText(mainRequests().at(-1)!)).toMatch(/^You are longhaul[^]*\n\nAnswer like a friendly pirate\.(\n|$)/);
    expect(await say("/persona", chat)).toMatch(/^Current persona: pirate — Answer like a friendly pirate\.$/m);
    expect(await say("/persona Be terse. Use 🦜 emoji.", chat)).toBe("Persona set.");
    await say("ok", chat);
    const system = systemText(mainRequests().at(-1)!);
    expect(system).toMatch(/\n\nBe terse\. Use 🦜 emoji\.(\n|$)/);
    expect(system).not.toContain("pirate");
    expect(await say("/persona off", chat)).toBe("Persona removed.");
    await say("plain", chat);
    expect(systemText(mainRequests().at(-1)!)).not.toContain("terse");

    expect(await say("/persona pirate", { userId: "1", chatId: "-100", group: true })).toBe("Only an admin can change the persona of a group.");
    expect(await say("/persona pirate", { userId: "2", chatId: "-100", group: true })).toBe("Persona set: pirate.");
  });

  it("/pair approve CODE from a chat is for admins and admits the user", async () => {
    const denied = await adapter.submit(inbound({ platform: "telegram", chatId: "99", sessionKey: "tg:99", userId: "99", userName: "newcomer", text: "let me in" }));
    expect(denied.status).toBe("denied");
    const code = /pairing code is ([A-Z0-9]{8})/.exec("notice" in denied ? denied.notice ?? "" : "")?.[1];
    expect(code).toBeDefined();
    expect(await say(`/pair approve ${code}`, { userId: "1" })).toBe("Only an admin can approve pairing requests.");
    expect(await say("/pair approve NOPE1234", { userId: "2" })).toBe("No pending pairing request with code NOPE1234 (codes expire after an hour).");
    expect(await say(`/pair approve ${code!.toLowerCase()}`, { userId: "2" })).toBe("Approved newcomer (telegram user 99). They can talk to me now.");
    // src/operator's approval, as from the CLI and the web console: logged with the admin who made it.
    const actions = pipeline.logs.lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === "operator-action");
    expect(actions).toContainEqual(expect.objectContaining({ operator: "chat:tg:2", action: "pairing-approve", found: true, userId: "99" }));
    expect(actions.map((action) => action.operator)).toEqual(["chat:tg:2", "chat:tg:2"]);
    expect(await say("hello, finally", { userId: "99" })).toMatch(/^echo: hello, finally/);
  });
});
