/**
 * The console chat in a real terminal (a tmux pseudo-terminal): it owns the screen. No JSON log
 * line ever shows; warnings show as one dimmed line; replies are Markdown rendered for the
 * terminal; a paste is one message; Tab completes /commands; Ctrl-D quits.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { lastUserText, startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { testEnv } from "../helpers/config.js";
import { startInTerminal, type TerminalSession } from "../helpers/tmux.js";

const REPLY = "Here is **bold** text:\n\n```js\nconsole.log(42);\n```\n\n- first item\n- second item";
const PROMPT = /you › *$/;
const lastLine = (screen: string) => screen.trimEnd().split("\n").at(-1) ?? "";
const occurrences = (text: string, needle: string) => text.split(needle).length - 1;

describe("terminal chat (TTY)", () => {
  let llm: FakeLlm;
  let dataDir: string;
  let terminal: TerminalSession | undefined;

  beforeEach(async () => {
    llm = await startFakeLlm();
    llm.setHandler((request) => (lastUserText(request) === "show me code" ? REPLY : { text: `echo: ${lastUserText(request)}` }));
    dataDir = mkdtempSync(join(tmpdir(), "longhaul-tty-"));
  });
  afterEach(async () => {
    terminal?.close();
    await llm.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("shows no log line, renders Markdown, keeps a paste whole, completes commands, quits on Ctrl-D", async () => {
    // LOG_LEVEL=info: plenty of log lines are written, none may reach the screen. The suite's
    // Redis has no AOF, so start-up warns once.
    terminal = startInTerminal(testEnv({ LLM_BASE_URL: llm.url, CONSOLE: "auto", LOG_LEVEL: "info", DATA_DIR: dataDir }));
    const chat = terminal;
    await chat.waitForScreen((screen) => PROMPT.test(lastLine(screen)), "the prompt");

    chat.type("show me code");
    chat.sendKeys("Enter");
    let screen = await chat.waitForScreen((text) => text.includes("second item") && PROMPT.test(lastLine(text)), "the rendered reply");
    // The code block: no fences, a gutter in front of the code, the language above it.
    expect(screen).not.toContain("```");
    expect(screen).toMatch(/^╭ js\n│ console\.log\(42\);$/m);
    expect(screen).toMatch(/^• first item\n• second item$/m);
    expect(screen).toContain("Here is bold text:");
    const styled = chat.screen({ escapes: true });
    expect(styled).toMatch(/\x1b\[1mbold\x1b\[(22|0)?m/);

    // A paste with newlines is one message, newlines kept.
    chat.paste("line one\nline two\n  indented three");
    await chat.waitForScreen((text) => lastLine(text).includes("line one⏎line two⏎  indented three"), "the paste in the input line");
    chat.sendKeys("Enter");
    await chat.waitForScreen((text) => text.includes("echo: line one\nline two\nindented three") && PROMPT.test(lastLine(text)), "the answer to the paste");
    expect(llm.requests).toHaveLength(2);
    expect(lastUserText(llm.requests[1]!)).toBe("line one\nline two\n  indented three");

    // Tab completes a command; the command is answered without the model.
    chat.type("/us");
    chat.sendKeys("Tab");
    await chat.waitForScreen((text) => /you › \/usage$/.test(lastLine(text)), "the completed command");
    chat.sendKeys("Enter");
    screen = await chat.waitForScreen((text) => text.includes("Tokens in:") && PROMPT.test(lastLine(text)), "the /usage answer");
    expect(llm.requests).toHaveLength(2);

    // Logs went to the file, not the screen; the start-up warning showed once, dimmed.
    expect(screen).not.toMatch(/\{"level"/);
    expect(screen).not.toContain("longhaul-ready");
    expect(occurrences(screen, "⚠ no AOF")).toBe(1);
    expect(chat.screen({ escapes: true })).toMatch(/\x1b\[2m⚠ no AOF/);
    const log = readFileSync(join(dataDir, "logs", "longhaul.log"), "utf8");
    expect(log).toContain('"msg":"longhaul-ready"');
    expect(log).toContain('"msg":"turn-committed"');

    chat.sendKeys("C-d");
    await chat.waitForScreen(() => chat.exitStatus() !== undefined, "the app to exit");
    expect(chat.exitStatus()).toBe(0);
    expect(existsSync(join(dataDir, "logs", "longhaul.log"))).toBe(true);
  });
});
