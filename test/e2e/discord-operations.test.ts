import { afterEach, describe, expect, it } from "vitest";
import { TEST_API_KEY } from "../helpers/config.js";
import { spawnApp, type AppProcess } from "../helpers/app-process.js";
import { settled } from "../helpers/settled.js";
import { DiscordE2E, E2E_TIMEOUT, closeExpectingOnlyAskerPinged, FAKE_TOKEN, IDS, fixture, mention, sleep, until, userTexts } from "../helpers/discord-pipeline.js";

/**
 * Discord end to end, the operational side: rate limits, duplicates, pairing, the typing
 * indicator, and the app as a child process. Same set-up as discord.test.ts: real discord.js
 * ↔ fake Discord, real ingress / queue / worker on Redis, fake LLM (echo unless scripted).
 */

describe("Discord through the whole pipeline: operations", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E | undefined;
  let app: AppProcess | undefined;
  let gate: { release(): void } | undefined;

  afterEach(async () => {
    gate?.release();
    gate = undefined;
    await app?.kill("SIGKILL");
    app = undefined;
    // Whatever a test did, every message the bot posted (notices too) pings no one but the asker.
    await closeExpectingOnlyAskerPinged(e2e);
    e2e = undefined;
  });

  it("retries a send that got a 429 (the REST client waits it out) and the reply arrives once", async () => {
    e2e = await DiscordE2E.start();
    await e2e.startPipeline();
    e2e.fake.failNextSend({ status: 429, retry_after: 0.4 });

    e2e.fake.dispatchMessage(fixture("guild-mention"));
    const [answer] = await e2e.waitForSent(1, IDS.textChannel);
    expect(answer).toMatchObject({ content: "echo: Ada (ops): how do I rotate the logs?", message_reference: { message_id: "600000000000000001" } });
    const attempts = e2e.messagePosts();
    expect(attempts.map((request) => request.status)).toEqual([429, 200]);
    // Same part, same nonce: the retry is the same message, not a new one.
    expect((attempts[1]?.body as { nonce?: unknown }).nonce).toBe((attempts[0]?.body as { nonce?: unknown }).nonce);

    await sleep(500);
    expect(e2e.sent()).toHaveLength(1);
    expect(e2e.llm.requests).toHaveLength(1);
  });

  it("with DISCORD_PING_ON_REPLY off, the reply in a guild channel pings no one", async () => {
    e2e = await DiscordE2E.start({ DISCORD_PING_ON_REPLY: "false" });
    await e2e.startPipeline();
    e2e.fake.dispatchMessage(fixture("guild-mention"));
    const [answer] = await e2e.waitForSent(1, IDS.textChannel);
    expect(answer?.allowed_mentions).toEqual({ parse: [], replied_user: false });
    expect(e2e.pings()).toMatchObject([{ pinged: [], expected: [] }]);
  });

  it("answers a message once when two gateway replicas on one token both receive it, and once more when it is re-dispatched", async () => {
    e2e = await DiscordE2E.start();
    // Two gateways on one token and one Redis, as in a rolling deploy (docs/discord.md):
    // both connections receive every MESSAGE_CREATE and both submit it.
    await e2e.startPipeline();
    await e2e.startPipeline({ worker: false });
    expect(e2e.fake.identifies).toHaveLength(2);

    const message = e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000201", "only once, please"));
    const [answer] = await e2e.waitForSent(1);
    expect(answer).toMatchObject({ content: "echo: Ada (ops): only once, please", message_reference: { message_id: "600000000000000201" } });
    // Both gateways submitted it; the ingress stored it once and called the other a duplicate.
    await until(() => expect(e2e!.logged("message-duplicate").filter((line) => line.messageId === "600000000000000201")).toHaveLength(1));
    expect(e2e.logged("message-accepted").filter((line) => line.messageId === "600000000000000201")).toHaveLength(1);

    // The same event again, on both connections (a replayed dispatch).
    e2e.fake.dispatch("MESSAGE_CREATE", message);
    // A later message in the same session is the barrier: once it is answered, anything the
    // replay would have caused has been queued ahead of it.
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000202", "and this one"));
    await until(() => expect(e2e!.sent().map((body) => body.content)).toContain("echo: Ada (ops): and this one"));
    await sleep(300);

    expect(e2e.sent().map((body) => body.content)).toEqual(["echo: Ada (ops): only once, please", "echo: Ada (ops): and this one"]);
    expect(e2e.llm.requests).toHaveLength(2);
    expect(userTexts(e2e.llm.requests[1])).toEqual(["Ada (ops): only once, please", "Ada (ops): and this one"]);
  });

  it("gives an unknown DM user a pairing code, keeps the LLM out of it, and answers once the CLI approved the code", async () => {
    // Ada (IDS.user) is not on the allowlist here.
    e2e = await DiscordE2E.start({ ALLOWED_DISCORD_USERS: IDS.otherUser });
    await e2e.startPipeline();

    e2e.fake.dispatchMessage(fixture("dm", { id: "600000000000000301", content: "hi, can I talk to you?" }));
    const [notice] = await e2e.waitForSent(1, IDS.dmChannel);
    const text = String(notice?.content);
    const code = /pairing code is ([A-Z0-9]{8})/.exec(text)?.[1];
    expect(code).toBeDefined();
    expect(text).toContain(`npm run pairing -- approve ${code}`);
    expect(notice?.message_reference).toEqual({ message_id: "600000000000000301", fail_if_not_exists: false });

    // Writing again within minutes brings no second code, and nothing reaches the model.
    e2e.fake.dispatchMessage(fixture("dm", { id: "600000000000000302", content: "hello?" }));
    await until(() => expect(e2e!.logged("message-denied")).toHaveLength(2));
    await sleep(300);
    expect(e2e.sent()).toHaveLength(1);
    expect(e2e.llm.requests).toHaveLength(0);
    expect(await e2e.transcript(`dc:dm:${IDS.user}`)).toEqual([]);

    const cli = spawnApp(e2e.env, { entry: "src/cli/pairing.ts", args: ["approve", code!] });
    expect(await cli.exited()).toBe(0);
    expect(cli.stdout()).toContain(`Approved Ada L. (discord user ${IDS.user})`);

    e2e.fake.dispatchMessage(fixture("dm", { id: "600000000000000303", content: "now?" }));
    await until(() => expect(e2e!.sent(IDS.dmChannel)).toHaveLength(2));
    expect(e2e.sent(IDS.dmChannel)[1]).toMatchObject({ content: "echo: now?", message_reference: { message_id: "600000000000000303" } });
    // Only the message after the approval was stored and sent to the model.
    expect(e2e.llm.requests).toHaveLength(1);
    expect(userTexts(e2e.llm.requests[0])).toEqual(["now?"]);
  });

  it("keeps typing while the turn runs and stops once the reply is sent", async () => {
    e2e = await DiscordE2E.start();
    await e2e.startPipeline({ adapter: { typingIntervalMs: 100 } });
    const typing = (): number => e2e!.typingPosts(IDS.textChannel).length;
    gate = e2e.llm.hold();

    e2e.fake.dispatchMessage(fixture("guild-mention"));
    await e2e.llm.waitForRequests(1, 45_000);
    // The model is still thinking: the indicator is posted at once and then refreshed.
    await until(() => expect(typing()).toBeGreaterThanOrEqual(3));
    expect(e2e.messagePosts()).toEqual([]);
    expect(e2e.typingPosts(IDS.textChannel).every((request) => request.status === 204)).toBe(true);

    const typedWhileThinking = typing();
    gate.release();
    await e2e.waitForSent(1, IDS.textChannel);
    // A running loop posts every 100 ms, so it is never quiet for 300 ms; a request that was
    // in flight when the reply went out may still land, then nothing more may come.
    const afterReply = await settled(typing, 300);
    await sleep(600);
    expect(typing()).toBe(afterReply);
    expect(afterReply).toBeGreaterThanOrEqual(typedWhileThinking);
    expect(e2e.sent()).toHaveLength(1);
  });

  it("runs as a process: answers a DM, never logs the bot token or the LLM key even at trace, and exits 0 on SIGTERM", { timeout: 150_000 }, async () => {
    e2e = await DiscordE2E.start({ LOG_LEVEL: "trace", CONSOLE: "off" });
    app = spawnApp(e2e.env);
    await app.waitForStderr(/longhaul-ready/, 60_000);
    expect(e2e.fake.identifies[0]).toMatchObject({ token: FAKE_TOKEN });

    e2e.fake.dispatchMessage(fixture("dm", { content: "are you there?" }));
    const [answer] = await e2e.waitForSent(1, IDS.dmChannel);
    expect(answer).toMatchObject({ content: "echo: are you there?", message_reference: { message_id: "600000000000000007" } });
    // The app did authenticate with both secrets, so they were there to leak.
    expect(e2e.fake.requests.every((request) => request.headers.authorization === `Bot ${FAKE_TOKEN}`)).toBe(true);
    expect(e2e.llm.requests[0]?.headers.authorization).toBe(`Bearer ${TEST_API_KEY}`);

    expect(await app.kill("SIGTERM")).toBe(0);
    const output = app.stdout() + app.stderr();
    expect(output).toContain("shutdown-finished");
    // Trace level really logged the Discord traffic.
    expect(output).toMatch(/discord connected/);
    expect(output).not.toContain(FAKE_TOKEN);
    expect(output).not.toContain(TEST_API_KEY);
  });
});
