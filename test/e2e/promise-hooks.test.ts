/**
 * The app runs its turns without promise hooks (issue #18): with an AsyncLocalStorage that has
 * run (the budget scope used one) or any enabled async hook, Node tracks every promise of the
 * process, and each turn makes thousands. Observed from inside the real process (gateway and
 * worker in one, as `npm start` runs them) by a probe preloaded with `--import`: promise
 * continuations have an async id only while promise hooks are on. The control shows the probe
 * sees them when an AsyncLocalStorage has run.
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { spawnApp } from "../helpers/app-process.js";
import { writeConfigFile } from "../helpers/config-file.js";
import { testEnv } from "../helpers/config.js";

const PROBE = pathToFileURL(fileURLToPath(new URL("../fixtures/async-hooks/promise-hooks-probe.mjs", import.meta.url))).href;

describe("promise hooks in the running app", () => {
  let llm: FakeLlm;
  beforeAll(async () => {
    llm = await startFakeLlm();
  });
  afterAll(() => llm.close());

  /** Two budgeted turns (a limit, so each call reserves and settles), then the probe's count at exit. */
  const runTurns = async (extra: Record<string, string> = {}) => {
    const app = spawnApp({
      ...testEnv({ LLM_BASE_URL: llm.url, CONSOLE: "auto", LONGHAUL_CONFIG_FILE: writeConfigFile("budgets:\n  chat: { daily: { tokens: 10000000 } }\n") }),
      ...extra,
    }, { nodeArgs: ["--import", PROBE] });
    try {
      app.child.stdin.write("hello there\n");
      await app.waitForStdoutLines(1);
      app.child.stdin.write("and again\n");
      await app.waitForStdoutLines(2);
      app.child.stdin.end();
      expect(await app.exited()).toBe(0);
    } finally {
      await app.kill("SIGKILL");
    }
    expect(app.stdout().trim().split("\n")).toEqual(["echo: hello there", "echo: and again"]);
    const line = /^promise-hooks-probe (.*)$/m.exec(app.stderr())?.[1];
    expect(line, app.stderr().slice(-2_000)).toBeDefined();
    return JSON.parse(line!) as { probes: number; tracked: number };
  };

  it("no promise of a turn is tracked: nothing in the process turns promise hooks on", async () => {
    const { probes, tracked } = await runTurns();
    expect(probes).toBeGreaterThan(10);
    expect(tracked).toBe(0);
  });

  it("control: the probe sees promise hooks once an AsyncLocalStorage has run", async () => {
    const { probes, tracked } = await runTurns({ PROBE_CONTROL: "als" });
    expect(tracked).toBeGreaterThan(10);
    expect(tracked).toBe(probes);
  });
});
