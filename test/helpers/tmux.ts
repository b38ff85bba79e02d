/**
 * Runs the app in a real pseudo-terminal: a tmux server of its own (its own socket, no user
 * config), so a test can type, paste (bracketed, as a terminal does) and read the screen.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface TerminalSession {
  /** The screen and its scrollback; with `escapes`, the SGR codes too. */
  screen(options?: { escapes?: boolean }): string;
  waitForScreen(predicate: (screen: string) => boolean, what: string, timeoutMs?: number): Promise<string>;
  /** tmux key names: "Enter", "Tab", "C-d"; anything else is typed literally. */
  sendKeys(...keys: string[]): void;
  type(text: string): void;
  /** Pastes as a terminal does: wrapped in bracketed-paste markers when the app asked for them. */
  paste(text: string): void;
  /** The app's exit status once it has exited, else undefined. */
  exitStatus(): number | undefined;
  close(): void;
}

export function assertTmuxInstalled(): void {
  const probe = spawnSync("tmux", ["-V"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) throw new Error("tmux is not installed: the terminal tests need it (apt-get install -y tmux)");
}

export function startInTerminal(env: Record<string, string>, options: { entry?: string; columns?: number; rows?: number } = {}): TerminalSession {
  assertTmuxInstalled();
  const buildDir = process.env.LONGHAUL_TEST_BUILD_DIR;
  if (!buildDir) throw new Error("no test build: the vitest global setup makes one");
  const socket = `longhaul-test-${randomBytes(4).toString("hex")}`;
  const tmuxEnv = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", TERM: "xterm-256color" };
  const tmux = (...args: string[]) => {
    const result = spawnSync("tmux", ["-L", socket, "-f", "/dev/null", ...args], { encoding: "utf8", env: tmuxEnv });
    if (result.status !== 0) throw new Error(`tmux ${args[0]} failed: ${result.stderr}`);
    return result.stdout;
  };
  // A first session keeps the server up while the options are set; the app's pane then stays
  // readable after it exits.
  tmux("new-session", "-d", "-s", "keep", "sleep", "86400");
  tmux("set-option", "-g", "remain-on-exit", "on");
  tmux("set-option", "-g", "history-limit", "5000");
  const entry = `${buildDir}/${(options.entry ?? "src/main.ts").replace(/\.ts$/, ".js")}`;
  // tmux 3.3 now and then leaves the exited app a zombie for many seconds (its SIGCHLD goes
  // unhandled), and the dead pane then has no exit status. A shell around the app waits for it
  // and writes the status to a file instead; its no-op traps leave Ctrl-C and signals to the app.
  const statusFile = join(tmpdir(), `${socket}.status`);
  const recordStatus = 'trap : INT TERM HUP; "$0" "$@"; echo $? > "$LONGHAUL_TEST_STATUS.tmp" && mv "$LONGHAUL_TEST_STATUS.tmp" "$LONGHAUL_TEST_STATUS"';
  const variables = Object.entries({ NODE_ENV: "test", ...env, LONGHAUL_TEST_STATUS: statusFile }).flatMap(([key, value]) => ["-e", `${key}=${value}`]);
  tmux("new-session", "-d", "-s", "app", "-c", ROOT, "-x", String(options.columns ?? 120), "-y", String(options.rows ?? 40), ...variables, "/bin/sh", "-c", recordStatus, process.execPath, entry);

  const screen = (screenOptions: { escapes?: boolean } = {}) =>
    tmux("capture-pane", "-p", "-t", "app", "-S", "-", ...(screenOptions.escapes ? ["-e"] : []));
  return {
    screen,
    async waitForScreen(predicate, what, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const text = screen();
        if (predicate(text)) return text;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; screen:\n${text}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    sendKeys: (...keys) => void tmux("send-keys", "-t", "app", ...keys),
    type: (text) => void tmux("send-keys", "-t", "app", "-l", text),
    paste(text) {
      tmux("set-buffer", "-b", "clip", text);
      tmux("paste-buffer", "-p", "-d", "-b", "clip", "-t", "app");
    },
    exitStatus() {
      return existsSync(statusFile) ? Number(readFileSync(statusFile, "utf8").trim()) : undefined;
    },
    close() {
      spawnSync("tmux", ["-L", socket, "kill-server"], { env: tmuxEnv });
      rmSync(statusFile, { force: true });
    },
  };
}
