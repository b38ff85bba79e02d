/**
 * A Discord gateway told to stop (a real SIGTERM to a real process) while the answer to a slash
 * command goes out through its interaction: the deferred reply edited with part 1, part 2 as a
 * follow-up. An interaction's webhook carries no nonce, and the interaction lives only in the
 * gateway that took it: the next gateway sends the rest of the reply to the channel. So a part on
 * the wire when the shutdown time runs out is recorded as sent before the exit, as a Telegram
 * part is (docs/architecture.md, "Shutdown"); before, the next gateway posted it again.
 */
import { afterEach, describe, expect, it } from "vitest";
import { COMMAND_MENU } from "../../../src/core/commands.js";
import { createRedis } from "../../../src/queue/index.js";
import { sessionKeys } from "../../../src/session/keys.js";
import { SessionStore } from "../../../src/session/store.js";
import type { Payload, RecordedRequest } from "../../fakes/fake-discord.js";
import { spawnApp, type AppProcess } from "../../helpers/app-process.js";
import { writeConfigFile } from "../../helpers/config-file.js";
import { NONCE_WINDOW_MS } from "../../fakes/fake-discord-rest.js";
import { DiscordE2E, fixture, IDS, MESSAGES_PATH, sleep, until } from "../../helpers/discord-pipeline.js";

/** A persona long enough that showing it (`/persona`) takes two messages. */
const LONG = `${"alpha ".repeat(300)}${"omega ".repeat(300)}`.trim();
const LAST_LINE = "Set one with /persona";

let e2e: DiscordE2E | undefined;
const apps: AppProcess[] = [];

afterEach(async () => {
  for (const app of apps.splice(0)) await app.kill("SIGKILL");
  await e2e?.close();
  e2e = undefined;
});

function start(role: "gateway" | "worker"): AppProcess {
  const app = spawnApp({ ...e2e!.env, LONGHAUL_ROLE: role });
  apps.push(app);
  return app;
}

async function startGateway(): Promise<AppProcess> {
  const gateway = start("gateway");
  await gateway.waitForStderr(/discord connected/, 90_000);
  return gateway;
}

/** The answer of one slash command, as the chat shows it: its non-empty interaction responses, in order. */
/** The next gateway took the delivery (once the stopped one's lease is out) and emptied the DM's outbox. */
async function outboxDrained(): Promise<void> {
  const redis = createRedis(e2e!.config.REDIS_URL ?? "");
  try {
    const store = new SessionStore(redis, e2e!.config.REDIS_PREFIX);
    await until(async () => expect(await store.sessionWork(`dc:dm:${IDS.user}`)).toMatchObject({ outbox: 0, deliveryRunning: false }), 90_000);
  } finally {
    redis.disconnect();
  }
}

const shown = (interactionId: string) => e2e!.fake.interactionResponses.filter((response) => response.interactionId === interactionId && response.content !== "" && !response.deleted);

describe("a Discord gateway stopped with SIGTERM while a slash command's answer goes out", () => {
  it.each([
    ["the follow-up (part 2)", (request: RecordedRequest) => request.method === "POST" && request.path.startsWith("/webhooks/") && String((request.body as Payload | undefined)?.content ?? "").includes(LAST_LINE)],
    ["the deferred reply's edit (part 1)", (request: RecordedRequest) => request.method === "PATCH" && decodeURIComponent(request.path).endsWith("/messages/@original") && String((request.body as Payload | undefined)?.content ?? "").startsWith("Current persona")],
  ])("%s on the wire past the shutdown time is recorded: the next gateway does not post it again", { timeout: 240_000 }, async (_name, held) => {
    e2e = await DiscordE2E.start({ SHUTDOWN_TIMEOUT_MS: "3000", LOG_LEVEL: "info", CONSOLE: "off", LONGHAUL_CONFIG_FILE: writeConfigFile(`personas:\n  long: "${LONG}"\n`) });
    const { fake } = e2e;
    const worker = start("worker");
    const first = await startGateway();
    await worker.waitForStderr(/longhaul-ready/, 90_000);
    await until(() => expect(fake.applicationCommands.size).toBe(COMMAND_MENU.length), 90_000);

    const chosen = fake.dispatchSlashCommand(IDS.dmChannel, "persona", "long");
    await until(() => expect(shown(chosen).map((response) => response.content)).toEqual(["Persona set: long."]), 90_000);

    // The request carrying the part reaches Discord, which acts on it; its answer never comes back.
    fake.holdAnswer(held, 120_000);
    const asked = fake.dispatchSlashCommand(IDS.dmChannel, "persona");
    await until(() => expect(fake.requests.some(held)).toBe(true), 90_000);
    await first.kill("SIGTERM");
    expect(first.stderr()).toContain("shutdown-timed-out");

    await startGateway();
    // The next gateway takes the delivery once the killed one's lease is out, and empties the outbox.
    await outboxDrained();
    await sleep(1_500);
    const channel = fake.botMessages(IDS.dmChannel).map((message) => String(message.content));
    expect(shown(asked)[0]?.content).toMatch(/^Current persona: long — alpha/);
    expect(channel.filter((content) => content.startsWith("Current persona"))).toHaveLength(1);
    expect(channel.filter((content) => content.includes(LAST_LINE))).toHaveLength(1);
    // Counted as a part whose outcome is unknown (longhaul_reply_parts_unconfirmed_total).
    expect(first.stderr()).toMatch(/"reason":"shutdown-timed-out","msg":"reply-part-unconfirmed"/);
  });

  it("a private answer going out (/export's files as ephemeral follow-ups) is finished by the stopping gateway, not left to one that would drop it", { timeout: 240_000 }, async () => {
    e2e = await DiscordE2E.start({ SHUTDOWN_TIMEOUT_MS: "8000", LOG_LEVEL: "info", CONSOLE: "off" });
    const { fake } = e2e;
    const worker = start("worker");
    const first = await startGateway();
    await worker.waitForStderr(/longhaul-ready/, 90_000);
    await until(() => expect(fake.applicationCommands.size).toBe(COMMAND_MENU.length), 90_000);

    // The first file's follow-up is answered 2 s late: the SIGTERM comes while it is on its way.
    const fileFollowUp = (request: RecordedRequest) => request.method === "POST" && request.path.startsWith("/webhooks/") && (request.body as Payload | undefined)?.content === undefined;
    fake.holdAnswer(fileFollowUp, 2_000);
    const asked = fake.dispatchSlashCommand(IDS.dmChannel, "export");
    await until(() => expect(fake.requests.some(fileFollowUp)).toBe(true), 90_000);
    expect(await first.kill("SIGTERM")).toBe(0);

    await startGateway();
    await outboxDrained();
    await sleep(1_500);
    const answer = fake.interactionResponses.filter((response) => response.interactionId === asked && !response.deleted);
    expect(answer.every((response) => response.ephemeral)).toBe(true);
    expect(answer.flatMap((response) => response.files).map((name) => name.replace(/.*\./, ""))).toEqual(["md", "json"]);
  });
});

/** Three paragraphs of ~1,900 characters: three Discord messages, each naming its part first. */
const THREE = ["alpha", "bravo", "delta"].map((word) => `${word} `.repeat(300).trim()).join("\n\n");

describe("a Discord gateway stopped with SIGTERM while a channel reply's part is on the wire", () => {
  it.each([
    ["within Discord's nonce window", 0],
    // The part on the wire is not recorded but marked; its nonce no longer stops a repeat, so the
    // next gateway counts it as sent (NONCE_SAFE_MS) instead of posting it again.
    ["after Discord's nonce window (the next gateway minutes later)", NONCE_WINDOW_MS],
  ])("the next gateway, %s, does not post that part again", { timeout: 240_000 }, async (_name, later) => {
    e2e = await DiscordE2E.start({ SHUTDOWN_TIMEOUT_MS: "3000", LOG_LEVEL: "info", CONSOLE: "off" });
    const { fake, llm } = e2e;
    const worker = start("worker");
    const first = await startGateway();
    await worker.waitForStderr(/longhaul-ready/, 90_000);
    llm.enqueue({ text: THREE });
    // Part 2 reaches Discord, which posts it; its answer never comes back.
    const held = (request: RecordedRequest) => request.method === "POST" && MESSAGES_PATH.test(request.path) && String((request.body as Payload | undefined)?.content ?? "").startsWith("bravo");
    fake.holdAnswer(held, 120_000);
    fake.dispatchMessage(fixture("dm", { content: "three parts, please" }));
    await until(() => expect(fake.requests.some(held)).toBe(true), 90_000);
    await first.kill("SIGTERM");
    expect(first.stderr()).toContain("shutdown-timed-out");

    expect(first.stderr()).toMatch(/"part":1,"reason":"shutdown-timed-out","msg":"reply-part-marked-on-wire"/);

    // Minutes pass for Discord's nonces and for the exit's mark alike.
    fake.ageNonces(later);
    const redis = createRedis(e2e.config.REDIS_URL ?? "");
    const marks = sessionKeys(e2e.config.REDIS_PREFIX, `dc:dm:${IDS.user}`).partsOnWire;
    try {
      for (const [field, at] of Object.entries(await redis.hgetall(marks))) await redis.hset(marks, field, String(Number(at) - later));
      const next = await startGateway();
      await until(() => expect(fake.botMessages(IDS.dmChannel).some((message) => String(message.content).startsWith("delta"))).toBe(true), 90_000);
      await sleep(1_500);
      expect(fake.botMessages(IDS.dmChannel).map((message) => String(message.content).split(" ")[0])).toEqual(["alpha", "bravo", "delta"]);
      // Within the window part 2 is sent again once (Discord returns the message it made); after it, never.
      expect(fake.requests.filter(held)).toHaveLength(later === 0 ? 2 : 1);
      if (later > 0) expect(next.stderr()).toMatch(/"part":1,"onWireMs":\d+,"msg":"reply-part-unconfirmed"/);
      expect(await redis.exists(marks)).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});

