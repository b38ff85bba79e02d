/**
 * Runs longhaul as a real child process, the way an operator runs it, so tests can pipe stdin,
 * read stdout, and kill it with SIGKILL or SIGTERM. It runs the JavaScript the global setup
 * compiled (test-build.ts; entries are given as source paths: `src/main.ts`).
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface AppProcess {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves when stdout has produced `count` lines (or rejects after timeoutMs). */
  waitForStdoutLines(count: number, timeoutMs?: number): Promise<string[]>;
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<void>;
  exited(): Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  /** Sends a signal without waiting for an exit (SIGSTOP / SIGCONT to freeze and thaw). */
  signal(name: NodeJS.Signals): void;
}

export function spawnApp(env: Record<string, string>, options: { entry?: string; args?: string[]; nodeArgs?: string[] } = {}): AppProcess {
  const buildDir = process.env.LONGHAUL_TEST_BUILD_DIR;
  if (!buildDir) throw new Error("no test build: call buildForChildProcesses() first (the vitest global setup does)");
  const entry = `${buildDir}/${(options.entry ?? "src/main.ts").replace(/\.ts$/, ".js")}`;
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), entry, ...(options.args ?? [])], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", NODE_ENV: "test", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  // Settles once the process has exited and its stdout and stderr are read to the end: "exit" can
  // come before the last output is read (seen on a loaded box), and a test that checks stderr
  // right after kill() must see every line. A grandchild holding the pipes open (none does: the
  // app gives its children other stdio) would delay this by the grace period at most.
  let closed = false;
  child.once("close", () => (closed = true));
  const exit = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      if (closed) return resolve(code);
      const grace = setTimeout(() => resolve(code), 5_000);
      child.once("close", () => {
        clearTimeout(grace);
        resolve(code);
      });
    }),
  );

  const waitFor = async <T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\nstdout:\n${out}\nstderr:\n${err.slice(-4000)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };

  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitForStdoutLines: (count, timeoutMs = 30_000) =>
      waitFor(() => {
        const lines = out.split("\n").filter((line) => line.length > 0);
        return lines.length >= count ? lines : undefined;
      }, timeoutMs, `${count} stdout lines`),
    waitForStderr: (pattern, timeoutMs = 30_000) => waitFor(() => (pattern.test(err) ? true : undefined), timeoutMs, `stderr ${pattern}`).then(() => undefined),
    exited: () => exit,
    signal: (name) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(name);
    },
    kill: async (signal = "SIGTERM") => {
      // A frozen process must be thawed to act on SIGTERM.
      if (signal !== "SIGKILL" && child.exitCode === null && child.signalCode === null) child.kill("SIGCONT");
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exit;
    },
  };
}
