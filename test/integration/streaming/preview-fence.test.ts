/**
 * Previews fenced like deliveries (issue 28 item 5), on real Redis with the renderer and a
 * scripted platform: an interim edit that outlives its claim (a gateway stalled between the
 * claim and the edit, or inside the edit) never stays over a delivered final, and a status
 * message whose create lost its answer is found again by the final, or, when its answer only
 * came late (Telegram under load), kept as the preview or deleted then. The final is played by
 * hand as delivery plays it: take → platform → shown.
 */
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import type { LateCreate, PreviewPort, ReplyTarget } from "../../../src/adapters/channel-adapter.js";
import type { PreviewUpdate } from "../../../src/core/channel.js";
import { RetryableError } from "../../../src/errors.js";
import { PreviewRenderer } from "../../../src/gateway/preview-renderer.js";
import { silentLogger } from "../../../src/logger.js";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { PREVIEW_POLL_FIRST_MS, PREVIEW_POLL_MAX_MS, PreviewRecords, type PreviewClaim } from "../../../src/session/previews.js";
import { uniquePrefix } from "../../helpers/config.js";
import { sleep } from "../../helpers/stall-run.js";

const SESSION = "tg:42";
const PREVIEW = "tg:42#7#1";
const HOLD_MS = 400;
const target: ReplyTarget = { platform: "telegram", chatId: "42" };
const update = (text: string): PreviewUpdate => ({ sessionKey: SESSION, previewId: PREVIEW, target, text } as PreviewUpdate);

/** A gate a test opens by hand. */
function gate(): { wait: Promise<void>; open(): void } {
  let open = (): void => {};
  const wait = new Promise<void>((resolve) => { open = resolve; });
  return { wait, open };
}

/** The chat as the platform shows it, and a port whose next edit or create can be held or lose its answer. */
class ScriptedPort implements PreviewPort {
  readonly messages = new Map<string, string>();
  /** Every write the platform saw, in order: `create <text>`, `edit <text>`. */
  readonly writes: string[] = [];
  readonly byPreview = new Map<string, string>();
  holdNextEdit: Promise<void> | undefined;
  loseNextCreate = false;
  /** The next create makes its message at once, but is answered only when this opens, past its deadline (as Telegram under load). */
  answerNextCreateWhen: Promise<void> | undefined;
  /** Discord's enforced nonce (a create with the same preview id returns the message made before); false: Telegram, none. */
  nonce = true;
  intervalMs = 0;
  #next = 100;
  minIntervalMs(): number {
    return this.intervalMs;
  }
  async create(_target: ReplyTarget, text: string, signal: AbortSignal, previewId?: string, late?: LateCreate): Promise<string> {
    const made = previewId === undefined || !this.nonce ? undefined : this.byPreview.get(previewId);
    if (made !== undefined && this.messages.has(made)) return made;
    const id = String(this.#next++);
    this.writes.push(`create ${text}`);
    this.messages.set(id, text);
    if (previewId) this.byPreview.set(previewId, id);
    if (this.loseNextCreate) {
      this.loseNextCreate = false;
      // The platform made the message; its answer never came back.
      throw new RetryableError("preview create: the connection was reset after the request went out");
    }
    const answerWhen = this.answerNextCreateWhen;
    this.answerNextCreateWhen = undefined;
    if (answerWhen) {
      // The caller is answered at its deadline; the platform's answer follows when the test says.
      void answerWhen.then(() => late?.arrived(id));
      await new Promise((resolve) => (signal.aborted ? resolve(undefined) : signal.addEventListener("abort", resolve, { once: true })));
      throw new RetryableError("preview create: no answer before its deadline");
    }
    return id;
  }
  async edit(_target: ReplyTarget, messageId: string, text: string): Promise<void> {
    const held = this.holdNextEdit;
    this.holdNextEdit = undefined;
    // A gateway stalled inside the call: the edit reaches the platform late.
    if (held) await held;
    this.writes.push(`edit ${text}`);
    if (this.messages.has(messageId)) this.messages.set(messageId, text);
  }
  async remove(_target: ReplyTarget, messageId: string): Promise<void> {
    this.messages.delete(messageId);
  }
  async recover(_target: ReplyTarget, previewId: string, signal: AbortSignal): Promise<string> {
    return this.create(target, "⏳", signal, previewId);
  }
}

/** Records whose next claim answers and then stalls (the gateway froze right after it). */
class StallingRecords extends PreviewRecords {
  stallAfterNextClaim: Promise<void> | undefined;
  override async claim(sessionKey: string, previewId: string, owner: string, holdMs: number): Promise<PreviewClaim> {
    const claim = await super.claim(sessionKey, previewId, owner, holdMs);
    const stall = this.stallAfterNextClaim;
    this.stallAfterNextClaim = undefined;
    if (stall) await stall;
    return claim;
  }
}

describe("previews fenced like deliveries", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(inject("redisUrl"));
  });
  afterAll(() => redis.disconnect());

  async function shownPreview() {
    const records = new StallingRecords(redis, uniquePrefix());
    const port = new ScriptedPort();
    const renderer = new PreviewRenderer({ records, ports: new Map([["telegram", port]]), logger: silentLogger, requestMs: HOLD_MS });
    renderer.accept(update("💭 Thinking…"));
    await vi.waitFor(() => expect([...port.messages.values()]).toEqual(["💭 Thinking…"]));
    const messageId = [...port.messages.keys()][0]!;
    // Past the owner's stickiness is irrelevant here: the same renderer writes again.
    return { records, port, renderer, messageId };
  }

  /** The final of a preview-only reply (/stop), as delivery plays it. → whether it must put itself back. */
  async function stopFinal(records: PreviewRecords, port: ScriptedPort): Promise<boolean> {
    let taken = await records.take(SESSION, PREVIEW);
    while (taken.status === "busy") {
      await sleep(taken.retryInMs);
      taken = await records.take(SESSION, PREVIEW);
    }
    if (taken.status !== "edit") throw new Error(`the final found no preview (${taken.status})`);
    port.messages.set(taken.messageId, "⏹ Stopped.");
    return records.shown(SESSION, PREVIEW, "⏹ Stopped.");
  }

  it("a gateway stalled past its claim between the claim and the edit writes nothing once the final took the preview", async () => {
    const { records, port, renderer, messageId } = await shownPreview();
    const stall = gate();
    records.stallAfterNextClaim = stall.wait;
    renderer.accept(update("✍️ Writing the answer…"));
    await sleep(HOLD_MS + 200);
    expect(await stopFinal(records, port)).toBe(false);
    stall.open();
    await sleep(300);
    expect(port.messages.get(messageId)).toBe("⏹ Stopped.");
    renderer.close();
  });

  it("an edit that reached the platform after the final (stalled inside the call) is undone by the renderer: the final is put back", async () => {
    const { records, port, renderer, messageId } = await shownPreview();
    const stall = gate();
    port.holdNextEdit = stall.wait;
    renderer.accept(update("✍️ Writing the answer…"));
    await sleep(HOLD_MS + 200);
    expect(await stopFinal(records, port)).toBe(false);
    stall.open();
    await vi.waitFor(() => expect(port.messages.get(messageId)).toBe("⏹ Stopped."));
    renderer.close();
  });

  it("when the late edit is reported before the final says what it left, the final learns it must put itself back", async () => {
    const { records, port, renderer, messageId } = await shownPreview();
    const stall = gate();
    port.holdNextEdit = stall.wait;
    renderer.accept(update("✍️ Writing the answer…"));
    await sleep(HOLD_MS + 200);
    const taken = await records.take(SESSION, PREVIEW);
    expect(taken).toEqual({ status: "edit", messageId });
    port.messages.set(messageId, "⏹ Stopped.");
    // The late edit lands and the renderer reports it before delivery records what it left.
    stall.open();
    await vi.waitFor(async () => expect(JSON.parse((await redis.hget(records.keysFor(SESSION), PREVIEW))!)).toMatchObject({ l: 1 }));
    expect(port.messages.get(messageId)).toBe("✍️ Writing the answer…");
    expect(await records.shown(SESSION, PREVIEW, "⏹ Stopped.")).toBe(true);
    renderer.close();
  });

  it("a status message whose create lost its answer is found by the final (the platform's nonce) instead of staying as an orphan", async () => {
    const records = new PreviewRecords(redis, uniquePrefix());
    const port = new ScriptedPort();
    // No second write before the final comes.
    port.intervalMs = 60_000;
    const renderer = new PreviewRenderer({ records, ports: new Map([["telegram", port]]), logger: silentLogger, requestMs: HOLD_MS });
    port.loseNextCreate = true;
    renderer.accept(update("💭 Thinking…"));
    await vi.waitFor(async () => expect(JSON.parse((await redis.hget(records.keysFor(SESSION), PREVIEW)) ?? "{}")).toMatchObject({ s: "lost" }));
    const orphan = [...port.messages.keys()][0]!;
    renderer.close();
    // The final: the record says a create may have landed; the platform finds it, and the
    // final takes it over as it takes any preview (sends itself, deletes the status).
    expect(await records.take(SESSION, PREVIEW)).toEqual({ status: "lost" });
    expect(await port.recover(target, PREVIEW, AbortSignal.timeout(1_000))).toBe(orphan);
    expect(port.messages.size).toBe(1);
  });

  it("the next write after a lost create finds the same message (the nonce) and the final takes it: one status message", async () => {
    const records = new PreviewRecords(redis, uniquePrefix());
    const port = new ScriptedPort();
    const renderer = new PreviewRenderer({ records, ports: new Map([["telegram", port]]), logger: silentLogger, requestMs: HOLD_MS });
    port.loseNextCreate = true;
    renderer.accept(update("💭 Thinking…"));
    await vi.waitFor(async () => expect(JSON.parse((await redis.hget(records.keysFor(SESSION), PREVIEW)) ?? "{}")).toMatchObject({ s: "open" }));
    renderer.accept(update("✍️ Writing the answer…"));
    await vi.waitFor(() => expect([...port.messages.values()]).toEqual(["✍️ Writing the answer…"]));
    renderer.close();
    expect(await records.take(SESSION, PREVIEW)).toEqual({ status: "edit", messageId: [...port.messages.keys()][0] });
  });
  /** A renderer on Telegram's terms (no nonce) whose first create is answered only when the returned gate opens. */
  async function lateCreate(intervalMs: number, settled: "lost" | "open") {
    const records = new PreviewRecords(redis, uniquePrefix());
    const port = new ScriptedPort();
    port.nonce = false;
    port.intervalMs = intervalMs;
    const answer = gate();
    port.answerNextCreateWhen = answer.wait;
    const renderer = new PreviewRenderer({ records, ports: new Map([["telegram", port]]), logger: silentLogger, requestMs: HOLD_MS });
    renderer.accept(update("💭 Thinking…"));
    await vi.waitFor(async () => expect(JSON.parse((await redis.hget(records.keysFor(SESSION), PREVIEW)) ?? "{}")).toMatchObject({ s: settled }));
    const status = [...port.messages.keys()][0]!;
    return { records, port, renderer, answer, status };
  }

  it("a status whose create was answered only after the final took the preview is deleted when the answer comes (Telegram: nothing else finds it)", async () => {
    // No second write before the final comes.
    const { records, port, renderer, answer, status } = await lateCreate(60_000, "lost");
    // The final: `lost`, and Telegram cannot look the message up, so it sends itself beside it.
    expect(await records.take(SESSION, PREVIEW)).toEqual({ status: "lost" });
    expect(port.messages.has(status)).toBe(true);
    answer.open();
    await vi.waitFor(() => expect(port.messages.size).toBe(0));
    renderer.close();
  });

  it("a status answered late before anything replaced it becomes the preview, and the final takes it over", async () => {
    const { records, port, renderer, answer, status } = await lateCreate(60_000, "lost");
    answer.open();
    await vi.waitFor(async () => expect(JSON.parse((await redis.hget(records.keysFor(SESSION), PREVIEW)) ?? "{}")).toMatchObject({ s: "open", m: status }));
    expect(await records.take(SESSION, PREVIEW)).toEqual({ status: "edit", messageId: status });
    expect([...port.messages.keys()]).toEqual([status]);
    renderer.close();
  });

  it("a status answered late after another create replaced it is deleted: one status message, the one the final takes", async () => {
    // Once `lost`, the renderer creates again at once (the same text is still unshown): a second status message.
    const { records, port, renderer, answer, status } = await lateCreate(0, "open");
    expect(port.messages.size).toBe(2);
    answer.open();
    await vi.waitFor(() => expect(port.messages.has(status)).toBe(false));
    const [second] = [...port.messages.keys()];
    expect(port.messages.size).toBe(1);
    expect(await records.take(SESSION, PREVIEW)).toEqual({ status: "edit", messageId: second });
    renderer.close();
  });
});

describe("a final that finds a preview write in flight (issue 32)", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(inject("redisUrl"));
  });
  afterAll(() => redis.disconnect());

  it("takes the preview when that write ends, asking again soon, and no interim write starts meanwhile: the platform sees the held edit, then only the final", async () => {
    const records = new PreviewRecords(redis, uniquePrefix());
    const port = new ScriptedPort();
    // Writes as often as updates come: the latest update is due at once after each write.
    port.intervalMs = 0;
    const renderer = new PreviewRenderer({ records, ports: new Map([["telegram", port]]), logger: silentLogger, requestMs: 5_000 });
    renderer.accept(update("💭 Thinking…"));
    await vi.waitFor(() => expect(port.writes).toEqual(["create 💭 Thinking…"]));
    const messageId = [...port.messages.keys()][0]!;
    const held = gate();
    port.holdNextEdit = held.wait;
    renderer.accept(update("✍️ Writing the answer…"));
    await vi.waitFor(() => expect(port.holdNextEdit).toBeUndefined());
    // The final comes while that edit is on the wire; the turn's last update arrives behind it.
    const waits: number[] = [];
    const final = records.takeWhenFree(SESSION, PREVIEW, async (ms) => {
      waits.push(ms);
      await sleep(ms);
    });
    await vi.waitFor(() => expect(waits.length).toBeGreaterThan(0));
    renderer.accept(update("✍️ Writing the answer… (more)"));
    held.open();
    expect(await final).toEqual({ status: "edit", messageId });
    // Nothing more is written after the final took the preview.
    await sleep(100);
    expect(port.writes).toEqual(["create 💭 Thinking…", "edit ✍️ Writing the answer…"]);
    // Asked again within a fraction of the write's 5 s hold, however long it has left.
    expect(waits[0]).toBe(PREVIEW_POLL_FIRST_MS);
    expect(Math.max(...waits)).toBeLessThanOrEqual(PREVIEW_POLL_MAX_MS);
    renderer.close();
  });

  it("once a final waits, the renderer's next claim is refused: after an edit in flight, and after a create the platform refused", async () => {
    const records = new PreviewRecords(redis, uniquePrefix());
    // An edit in flight: the final waits; when the edit is over, no other starts.
    expect(await records.claim(SESSION, PREVIEW, "gw-a", 5_000)).toEqual({ status: "create" });
    expect(await records.opened(SESSION, PREVIEW, "gw-a", "m1")).toBe(true);
    expect(await records.claim(SESSION, PREVIEW, "gw-a", 5_000)).toEqual({ status: "edit", messageId: "m1" });
    expect((await records.take(SESSION, PREVIEW)).status).toBe("busy");
    expect(await records.edited(SESSION, PREVIEW, "gw-a")).toEqual({ status: "ok" });
    expect(await records.claim(SESSION, PREVIEW, "gw-a", 5_000)).toEqual({ status: "closed" });
    expect(await records.take(SESSION, PREVIEW)).toEqual({ status: "edit", messageId: "m1" });

    // A create in flight the platform then refused: no second create starts; the final sends itself.
    const other = "tg:42#8#1";
    expect(await records.claim(SESSION, other, "gw-a", 5_000)).toEqual({ status: "create" });
    expect((await records.take(SESSION, other)).status).toBe("busy");
    await records.release(SESSION, other, "gw-a");
    expect(await records.claim(SESSION, other, "gw-a", 5_000)).toEqual({ status: "closed" });
    expect(await records.take(SESSION, other)).toEqual({ status: "none" });
  });
});
