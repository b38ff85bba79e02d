/**
 * The web console over HTTP (no browser): login and its refusals, the cookie, CSRF and origin
 * checks on every form, server-side paging and sorting of sessions, the timeline's compaction
 * marks, and the actions (pairing approve, dead-letter retry) going through src/operator.
 * The real-browser test is test/e2e/web-console-browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import type { Config } from "../../../config/index.js";
import { AccessControl, accessListsFrom } from "../../../src/gateway/access.js";
import { listDeadLetters } from "../../../src/session/dead-letters.js";
import { sessionKeys } from "../../../src/session/keys.js";
import { newSessionState } from "../../../src/session/state.js";
import { lastUserText, startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { testConfig, testEnv } from "../../helpers/config.js";
import { captureLogs, startPipeline, type LogCapture, type Pipeline } from "../../helpers/pipeline.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { CONSOLE_TOKEN, ConsoleClient, FlakyAdapter, startConsoleServer, type ConsoleServer } from "../../helpers/web-console.js";

describe("web console over HTTP", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let config: Config;
  let server: ConsoleServer;
  let logs: LogCapture;
  let redis: Redis;
  const adapter = new FlakyAdapter();
  let count = 0;
  const say = (text: string, chatId = "chat-1") => adapter.ask(inbound({ text, chatId, messageId: `wc${++count}`, userName: "Ada" }));

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.route(isSummarizerRequest, { text: "## Goal\nTalk about trains.", usage: { prompt_tokens: 500, completion_tokens: 40 } });
    llm.setHandler((request) => ({ text: lastUserText(request).includes("doomed") ? "echo: doomed" : "noted", usage: { prompt_tokens: 1_000, completion_tokens: 50, prompt_tokens_details: { cached_tokens: 400 } } }));
    config = testConfig(testEnv({ LLM_BASE_URL: llm.url, PROTECT_LAST_N: "2", DELIVERY_MAX_ATTEMPTS: "2", LLM_CONTEXT_WINDOW: "64000", LLM_PRICE_INPUT: "1", LLM_PRICE_OUTPUT: "2" }));
    logs = captureLogs("info");
    pipeline = await startPipeline(config, [adapter], { logs });
    server = await startConsoleServer(config, logs.logger);
    redis = new Redis(config.REDIS_URL!);
  });
  afterAll(async () => {
    await server.close();
    await pipeline.close();
    await llm.close();
    redis.disconnect();
    // The token is a secret: no log line carries it.
    expect(logs.lines.join("")).not.toContain(CONSOLE_TOKEN);
  });

  it("sends every page to the login form until logged in; refuses a wrong token (401, no cookie) and a login from another origin (403)", async () => {
    const client = new ConsoleClient(server.base);
    for (const path of ["/console", "/console/sessions", "/console/usage", "/console/operations", "/console/sessions/console%3Achat-1"]) {
      const response = await client.get(path);
      expect(response.status, path).toBe(303);
      expect(response.headers.get("location")).toBe("/console/login");
    }
    const form = await (await client.get("/console/login")).text();
    expect(form).toContain('<label for="token">Console token</label>');
    expect(form).toContain('type="password"');

    const wrong = await client.login("console-SECRET-token-0123456788");
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    expect(await wrong.text()).toContain("That token is not right.");
    expect(logs.lines.some((line) => line.includes('"console-login-refused"'))).toBe(true);

    const forged = await client.post("/console/login", { token: CONSOLE_TOKEN }, { origin: "http://evil.example" });
    expect(forged.status).toBe(403);
    expect(client.cookie).toBeUndefined();
  });

  it("logs in with the token: an HttpOnly, SameSite=Strict session cookie (Secure behind an https proxy); logout ends the session", async () => {
    const client = new ConsoleClient(server.base);
    const response = await client.login();
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/console/sessions");
    const cookie = response.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^lh_console=[\w-]{40,}; Path=\/console; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    expect((await client.get("/console/sessions")).status).toBe(200);

    const proxied = new ConsoleClient(server.base);
    const secure = await proxied.post("/console/login", { token: CONSOLE_TOKEN }, { "x-forwarded-proto": "https", origin: server.base.replace("http:", "https:") });
    expect(secure.headers.get("set-cookie")).toMatch(/; Secure$/);

    const csrf = await client.csrf();
    expect((await client.post("/console/logout", { csrf })).headers.get("location")).toBe("/console/login");
    client.cookie = cookie.split(";")[0];
    expect((await client.get("/console/sessions")).status).toBe(303);
  });

  it("refuses a form without the session's CSRF token or from another origin; with both, approves a pairing request through src/operator", async () => {
    const access = new AccessControl(redis, config.REDIS_PREFIX, accessListsFrom(config));
    const verdict = await access.check({ platform: "telegram", chatId: "77", userId: "77", userName: "Eve", chatType: "private" });
    const code = /pairing code is ([A-Z0-9]{8})/.exec(verdict.allowed ? "" : verdict.notice ?? "")?.[1] ?? "";
    const client = new ConsoleClient(server.base);
    await client.login();
    const page = await (await client.get("/console/operations")).text();
    expect(page).toContain(`<code>${code}</code>`);
    const csrf = await client.csrf();

    expect((await client.post("/console/pairing/approve", { code })).status).toBe(403);
    expect((await client.post("/console/pairing/approve", { code, csrf: `${csrf}x` })).status).toBe(403);
    expect((await client.post("/console/pairing/approve", { code, csrf }, { origin: "http://evil.example" })).status).toBe(403);
    // Another login's token is not this one's.
    const other = new ConsoleClient(server.base);
    await other.login();
    expect((await client.post("/console/pairing/approve", { code, csrf: await other.csrf() })).status).toBe(403);
    expect(await access.isUserAllowed("telegram", "77")).toBe(false);

    const approved = await client.post("/console/pairing/approve", { code, csrf });
    expect(approved.status).toBe(303);
    const notice = await (await client.get(approved.headers.get("location") ?? "")).text();
    expect(notice).toContain("Approved Eve (telegram user 77)");
    expect(await access.isUserAllowed("telegram", "77")).toBe(true);
    const action = logs.lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === "operator-action" && line.action === "pairing-approve");
    expect(action).toMatchObject({ operator: "console:127.0.0.1", platform: "telegram", userId: "77", found: true });
  });

  it("shows a dead letter with its error and retries it from the Operations page", async () => {
    await adapter.submit(inbound({ text: "doomed", chatId: "chat-dl", messageId: "wc-dl" }));
    await adapter.waitFor((sent) => sent.some((entry) => entry.reply.text.includes("could not be delivered")), 60_000);
    const [letter] = await listDeadLetters(redis, config.REDIS_PREFIX);
    const client = new ConsoleClient(server.base);
    await client.login();
    const page = await (await client.get("/console/operations")).text();
    expect(page).toContain("echo: doomed");
    expect(page).toContain("after 2 attempts: Cannot read properties of undefined");
    expect(page).toMatch(/<th scope="row">turns<\/th>/);
    adapter.repaired = true;
    const retried = await client.post("/console/dead-letters/retry", { session: "console:chat-dl", id: letter!.id, csrf: await client.csrf() });
    expect(retried.status).toBe(303);
    await adapter.waitFor((sent) => sent.some((entry) => entry.reply.text === "echo: doomed"), 30_000);
    expect(await listDeadLetters(redis, config.REDIS_PREFIX)).toEqual([]);
  });

  it("marks both compactions of a session on its timeline, with kind, saving and summarizer; summary and pins as text", async () => {
    for (let turn = 1; turn <= 3; turn++) await say(`note ${turn}: ${"we talk about trains and the coast ".repeat(40)}`);
    await say("/pin the coast line is 42 km");
    expect(await say("/compress")).toMatch(/^Compacted: /);
    await say(`note 4: ${"and then about boats ".repeat(40)}`);
    await say(`note 5: ${"and then about harbours ".repeat(40)}`);
    expect(await say("/compress")).toMatch(/^Compacted: /);
    const client = new ConsoleClient(server.base);
    await client.login();
    const page = await (await client.get("/console/sessions/console%3Achat-1")).text();
    expect(page.match(/<li data-kind="manual">/g)).toHaveLength(2);
    expect(page).toMatch(/manual: folded \d+ messages \(m\d+…m\d+\), saved [\d.]+K? tokens/);
    expect(page).toContain("Talk about trains.");
    expect(page).toContain("the coast line is 42 km");
    const data = JSON.parse(/<script type="application\/json" id="timeline-data">(.*?)<\/script>/s.exec(page)?.[1] ?? "{}") as { compactions: Array<{ kind: string }>; tokens: number[] };
    expect(data.compactions.map((mark) => mark.kind)).toEqual(["manual", "manual"]);
    expect(data.tokens.length).toBeGreaterThanOrEqual(7);
    expect(page).toContain('src="/console/assets/uplot.js"');
    const script = await client.get("/console/assets/uplot.js");
    expect(script.headers.get("content-type")).toContain("javascript");
    expect(await script.text()).toContain("uPlot");
    expect((await client.get("/console/sessions/console%3Anobody")).status).toBe(404);
    expect((await client.get("/console/sessions/%E0%A4%A")).status).toBe(404);
  });

  it("pages, sorts and searches thousands of sessions on the server", async () => {
    const now = Date.now();
    const writes = [];
    for (let index = 0; index < 1_200; index++) {
      const { live: _live, ...state } = newSessionState(now - index * 60_000);
      writes.push(redis.set(sessionKeys(config.REDIS_PREFIX, `tg:${900_000 + index}`).state, JSON.stringify({ ...state, stats: { ...state.stats, compactions: index % 7 } })));
    }
    await Promise.all(writes);
    const client = new ConsoleClient(server.base);
    await client.login();
    const first = await (await client.get("/console/sessions?q=tg%3A9&sort=activity&dir=desc")).text();
    expect(first).toContain("Showing 1–50 of 1200 sessions matching “tg:9”");
    expect(first.match(/<tr>\s*<th scope="row">/g)).toHaveLength(50);
    expect(first.indexOf("tg:900000")).toBeLessThan(first.indexOf("tg:900001"));
    const last = await (await client.get("/console/sessions?q=tg%3A9&sort=session&dir=asc&page=24")).text();
    expect(last).toContain("Showing 1151–1200 of 1200");
    expect(last).toContain("tg:901199");
    expect(last).toContain("Page 24 of 24");
    const one = await (await client.get("/console/sessions?q=tg%3A901234")).text();
    expect(one).toContain("Showing 0–0 of 0 sessions");
    const sorted = await (await client.get("/console/sessions?q=tg%3A9&sort=compactions&dir=desc")).text();
    expect(sorted).toMatch(/aria-sort="descending"><a [^>]*>Compactions ▼/);
  });

  it("shows usage per day, by chat, user and model, with budgets and compaction savings", async () => {
    const client = new ConsoleClient(server.base);
    await client.login();
    const page = await (await client.get("/console/usage?days=7")).text();
    expect(page).toContain("Cost per day, all chats");
    expect(page).toMatch(/<a href="\/console\/usage\?days=7&#38;chat=console%3Achat-1">console:chat-1<\/a>/);
    expect(page).toContain(">gpt-4o-mini</a>");
    expect(page).toMatch(/<rect x="170" y="\d+" width="[1-9]\d*" height="18" class="bar">/);
    expect(page).toMatch(/2 compactions in the last 7 days took [\d.]+K? tokens/);
    const chat = await (await client.get("/console/usage?days=7&chat=console%3Achat-1")).text();
    expect(chat).toContain("Per day: chat console:chat-1");
  });
});
