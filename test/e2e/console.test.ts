import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseStamp, startFakeLlm, textOf, withoutStamp, type FakeLlm } from "../fakes/fake-llm.js";
import { spawnApp, type AppProcess } from "../helpers/app-process.js";
import { testEnv } from "../helpers/config.js";
import { FILESYSTEM, writeConfigFile } from "../helpers/mcp.js";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

describe("console chat (the app as a child process, piped stdin)", () => {
  let llm: FakeLlm;
  let app: AppProcess | undefined;

  beforeEach(async () => {
    llm = await startFakeLlm();
  });
  afterEach(async () => {
    await app?.kill("SIGKILL");
    await llm.close();
  });

  it("answers each line on stdout and exits once stdin ends and everything is answered", async () => {
    app = spawnApp(testEnv({ LLM_BASE_URL: llm.url, CONSOLE: "auto", LOG_LEVEL: "info" }));
    app.child.stdin.write("hello there\n");
    await app.waitForStdoutLines(1);
    app.child.stdin.write("how are you?\n");
    await app.waitForStdoutLines(2);
    app.child.stdin.end();
    expect(await app.exited()).toBe(0);

    expect(app.stdout().trim().split("\n")).toEqual(["echo: hello there", "echo: how are you?"]);
    // Logs go to stderr, stdout carries only the replies.
    expect(app.stderr()).toContain("longhaul-ready");
    // The second request carries the whole conversation: the session persisted between turns.
    const second = llm.requests[1]?.body.messages.map((message) => `${message.role}:${message.role === "user" ? withoutStamp(textOf(message.content)) : String(message.content)}`);
    expect(second?.slice(1)).toEqual(["user:hello there", "assistant:echo: hello there", "user:how are you?"]);
    // MESSAGE_TIMESTAMPS (on by default): the model reads when each message was sent, today in the chat's zone (TZ=UTC).
    const today = new Date(llm.requests[1]!.at).toISOString().slice(0, 10);
    for (const message of llm.requests[1]!.body.messages.filter((candidate) => candidate.role === "user")) {
      expect(parseStamp(textOf(message.content))).toMatchObject({ date: today, zone: "UTC" });
    }
  });

  it("/export writes the Markdown and JSON files under DATA_DIR/exports and prints where", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "longhaul-export-"));
    app = spawnApp(testEnv({ LLM_BASE_URL: llm.url, CONSOLE: "auto", DATA_DIR: dataDir }));
    app.child.stdin.write("hello there\n");
    await app.waitForStdoutLines(1);
    app.child.stdin.write("/export\n");
    const lines = await app.waitForStdoutLines(5, 60_000);
    expect(lines[1]).toMatch(/^Your export: 2 messages in 1 conversation/);
    const saved = lines.slice(3).map((line) => /^📎 (\S+) saved to (.+)$/.exec(line));
    expect(saved.map((match) => match?.[2])).toEqual([
      expect.stringMatching(new RegExp(`^${join(dataDir, "exports")}/longhaul-export-console-.+\\.md$`)),
      expect.stringMatching(/\.json$/),
    ]);
    const markdown = readFileSync(saved[0]![2]!, "utf8");
    expect(markdown).toContain("hello there");
    expect(markdown).toContain("echo: hello there");
    const data = JSON.parse(readFileSync(saved[1]![2]!, "utf8")) as { sessions: Array<{ transcript: Array<{ content: string }> }> };
    expect(data.sessions.flatMap((session) => session.transcript.map((message) => withoutStamp(message.content ?? "")))).toEqual(["hello there", "echo: hello there"]);
    app.child.stdin.end();
    expect(await app.exited()).toBe(0);
  }, 120_000);

  it("answers lines that arrive together (collect mode batches them) and still exits cleanly", async () => {
    app = spawnApp(testEnv({ LLM_BASE_URL: llm.url, CONSOLE: "auto" }));
    app.child.stdin.end("one\ntwo\nthree\n");
    expect(await app.exited()).toBe(0);
    const lines = app.stdout().trim().split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines[lines.length - 1]).toBe("echo: three");
    // Every line reached the model exactly once, in order.
    const last = llm.requests[llm.requests.length - 1]?.body.messages ?? [];
    const userTexts = last.filter((message) => message.role === "user").map((message) => withoutStamp(textOf(message.content)));
    expect(userTexts).toEqual(["one", "two", "three"]);
  });

  it("asks for tool approval with y/n and takes the answer from the next line", async () => {
    const root = mkdtempSync(join(tmpdir(), "lh-console-approval-"));
    const file = writeConfigFile({ mcp: { servers: { files: { command: process.execPath, args: [FILESYSTEM, root], approval: "always" } } } });
    llm.setHandler((request) => request.body.messages.at(-1)?.role === "tool"
      ? { text: "note saved" }
      : { toolCalls: [{ name: "files__write_file", arguments: { path: join(root, "console.txt"), content: "typed y" } }] });
    app = spawnApp(testEnv({ LLM_BASE_URL: llm.url, CONSOLE: "auto", LONGHAUL_CONFIG_FILE: file }));
    app.child.stdin.write("save a note\n");
    const deadline = Date.now() + 60_000;
    while (!app.stdout().includes("(y = Approve, n = Deny)")) {
      if (Date.now() > deadline) throw new Error(`no approval request on stdout: ${app.stdout()}\n${app.stderr().slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    app.child.stdin.end("y\n");
    expect(await app.exited()).toBe(0);
    const out = app.stdout();
    expect(out).toContain("✅ Approved by you: ran `files__write_file`.");
    expect(out.trim().endsWith("note saved")).toBe(true);
    expect(readFileSync(join(root, "console.txt"), "utf8")).toBe("typed y");
  });

  it("refuses to start with a wrong setting and names the variable", async () => {
    app = spawnApp(testEnv({ LLM_BASE_URL: llm.url, COMPACTION_THRESHOLD: "1.7", BUSY_MODE: "sometimes" }));
    expect(await app.exited()).toBe(2);
    expect(app.stderr()).toMatch(/COMPACTION_THRESHOLD/);
    expect(app.stderr()).toMatch(/BUSY_MODE/);
  });
});
