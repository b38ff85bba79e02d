/**
 * `npm run eval` against the fake LLM over HTTP (issue #17, item 5): the real router, context
 * binding, compact(), summary prompt and LLM client; fake models whose answers come only from
 * what the requests carry (test/fakes/eval-models.ts). A summarizer that keeps everything lets
 * every probe pass, one that drops the lines with digits fails the probes about them: the score
 * measures what compaction kept.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, httpError, lastUserText, type FakeLlm, type RecordedRequest } from "../../fakes/fake-llm.js";
import { lossySummarizer, retentiveSummarizer, retrievalModel } from "../../fakes/eval-models.js";
import { isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { spawnApp } from "../../helpers/app-process.js";
import { writeConfigFile } from "../../helpers/config-file.js";
import { TEST_API_KEY } from "../../helpers/config.js";
import { runEvalCli } from "../../../src/eval/cli.js";
import { loadDialogue, PROBE_CATEGORIES } from "../../../src/eval/dialogue.js";
import type { EvalResult } from "../../../src/eval/run.js";

const CATALOGUE = `
models:
  default: main
  list:
    main: { id: fake-main, context_window: 128000, prices: { input: 1, output: 2 } }
    keeper: { id: fake-keeper, context_window: 128000 }
    dropper: { id: fake-dropper, context_window: 128000 }
    broken: { id: fake-broken, context_window: 128000 }
`;

const dialogue = loadDialogue();

interface Run {
  code: number;
  out: string;
  err: string;
}

async function evalCli(argv: string[], env: Record<string, string>): Promise<Run> {
  let out = "";
  let err = "";
  const code = await runEvalCli(argv, { env, out: (text) => (out += text), err: (text) => (err += text) });
  return { code, out, err };
}

const summarizerModel = (request: RecordedRequest) => request.body.model;

describe("npm run eval against the fake LLM", () => {
  let llm: FakeLlm;
  let env: Record<string, string>;

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.route((request) => isSummarizerRequest(request) && summarizerModel(request) === "fake-keeper", retentiveSummarizer);
    llm.route((request) => isSummarizerRequest(request) && summarizerModel(request) === "fake-dropper", lossySummarizer);
    llm.setHandler(retrievalModel(dialogue.probes));
    env = {
      LLM_BASE_URL: llm.url,
      LLM_API_KEY: TEST_API_KEY,
      LLM_MAX_RETRIES: "0",
      LLM_TIMEOUT_MS: "20000",
      LONGHAUL_CONFIG_FILE: writeConfigFile(CATALOGUE),
      LOG_LEVEL: "silent",
    };
  });
  afterAll(async () => {
    await llm.close();
  });

  it("scores every probe of every category, per summarizer, side by side", async () => {
    const first = llm.requests.length;
    const run = await evalCli(["--summarizer", "keeper,dropper", "--json"], env);
    expect(run.err).not.toMatch(/eval failed/);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.out) as EvalResult;
    expect(result.columns.map((column) => column.label)).toEqual(["keeper", "dropper"]);
    expect(result.messages).toBeGreaterThanOrEqual(150);

    for (const column of result.columns) {
      expect(column.mainModel).toBe("fake-main");
      // Every probe asked and scored, none without an answer.
      expect(column.probes.map((probe) => probe.id)).toEqual(dialogue.probes.map((probe) => probe.id));
      expect(column.probes.filter((probe) => probe.error)).toEqual([]);
      // Four forced compactions, each folding messages into the summary.
      expect(column.compactions.map((compaction) => compaction.afterDay)).toEqual([1, 2, 4, 5]);
      for (const compaction of column.compactions) expect(compaction.messagesAfter).toBeLessThan(compaction.messagesBefore);
    }
    const [keeper, dropper] = result.columns;
    expect(keeper!.summarizerModel).toBe("fake-keeper");
    expect(dropper!.summarizerModel).toBe("fake-dropper");
    // The summarizer that kept everything: every probe passes.
    expect(keeper!.probes.filter((probe) => !probe.pass).map((probe) => probe.id)).toEqual([]);
    // The one that dropped every line with a digit: the planted identifiers and numbers folded
    // away are gone, the corrected values too; the group's who-said-what (no digits) stays.
    const failed = new Set(dropper!.probes.filter((probe) => !probe.pass).map((probe) => probe.id));
    for (const id of ["po-number", "staging-health-url", "apple-pay-ticket", "invoice-amount", "launch-date", "release-candidate-commit", "read-replica"]) expect(failed).toContain(id);
    for (const id of ["payments-config-path", "deploy-sign-off", "analytics-instruction", "payment-provider", "status-format"]) expect(failed).not.toContain(id);

    // Iterative re-summarization: every compaction after the first folds the previous summary in.
    const summaries = llm.requests.slice(first).filter(isSummarizerRequest);
    const keeperCalls = summaries.filter((request) => summarizerModel(request) === "fake-keeper");
    expect(keeperCalls.length).toBeGreaterThanOrEqual(4);
    expect(keeperCalls.filter((request) => lastUserText(request).includes("<previous-summary>")).length).toBeGreaterThanOrEqual(3);
    // The main model never wrote a summary (no fallback): each column measures its summarizer.
    expect(summaries.every((request) => request.body.model !== "fake-main")).toBe(true);
    // Probes are asked without tools, over the compacted context: it starts with the system
    // prompt and holds the summary of the folded days.
    const probeRequests = llm.requests.slice(first).filter((request) => !isSummarizerRequest(request));
    expect(probeRequests).toHaveLength(2 * dialogue.probes.length);
    for (const request of probeRequests) {
      expect(request.body.tools).toBeUndefined();
      expect(request.body.messages[0]!.role).toBe("system");
      expect(request.body.messages.some((message) => String(message.content).includes("[Summary of earlier turns"))).toBe(true);
      // The day-1 messages were folded: none is in the probe's context as a message of its own.
      expect(request.body.messages.some((message) => String(message.content).startsWith("[Mon 2026-11-02"))).toBe(false);
      expect(request.body.messages.some((message) => String(message.content).startsWith("[Sat 2026-11-07"))).toBe(true);
    }
  });

  it("prints a table per category and overall, with the probes' answers under --verbose", async () => {
    const run = await evalCli(["--summarizer", "keeper,dropper", "--verbose", "--compact-after", "2,4"], env);
    expect(run.code).toBe(0);
    const categories = dialogue.probes.reduce((counts, probe) => counts.set(probe.category, (counts.get(probe.category) ?? 0) + 1), new Map<string, number>());
    for (const category of PROBE_CATEGORIES) {
      const total = categories.get(category)!;
      // keeper column: all of them; dropper column: some number of them.
      expect(run.out).toMatch(new RegExp(`^${category}\\s+${total}/${total} 100%\\s+\\d+/${total} \\d+%$`, "m"));
    }
    expect(run.out).toMatch(new RegExp(`^overall\\s+${dialogue.probes.length}/${dialogue.probes.length} 100%\\s+\\d+/${dialogue.probes.length} \\d+%$`, "m"));
    expect(run.out).toContain("after day 2 (2026-11-03)");
    expect(run.out).toMatch(/FAIL {2}identifiers\/po-number/);
    expect(run.out).toMatch(/pass {2}people\/deploy-sign-off: Whose sign-off does a production deploy need\?\n {8}answer: .*Priya/);
    // Calls and money at the catalogue's prices (the main model has prices, the summarizers none).
    expect(run.out).toMatch(/main fake-main: \d+ calls, [\d,]+ tokens in, [\d,]+ out, \$\d+\.\d{4}/);
  });

  it("--prompt compares summary-prompt variants: a variant replaces the summarizer's system prompt, with the engine's length in it", async () => {
    // This fake summarizer is found by its model, whatever prompt it is given.
    const keeper = llm.route((request) => request.body.model === "fake-keeper" && !isSummarizerRequest(request), retentiveSummarizer);
    try {
      const file = join(mkdtempSync(join(tmpdir(), "eval-prompt-")), "terse.txt");
      writeFileSync(file, "Keep a handoff summary of the turns, {length}, every line as it was.\n");
      const first = llm.requests.length;
      const run = await evalCli(["--summarizer", "keeper", "--prompt", `default,${file}`, "--json"], env);
      if (run.code !== 0) console.log(run.err.split("\n").slice(-15).join("\n"));
      expect(run.code).toBe(0);
      const result = JSON.parse(run.out) as EvalResult;
      expect(result.columns.map((column) => [column.label, column.prompt])).toEqual([["keeper/default", "default"], ["keeper/terse", "terse"]]);
      const summaries = llm.requests.slice(first).filter((request) => request.body.model === "fake-keeper");
      const systems = summaries.map((request) => String(request.body.messages[0]!.content));
      expect(systems.filter((text) => text.startsWith("You compact the context"))).toHaveLength(4);
      const variant = systems.filter((text) => !text.startsWith("You compact the context"));
      expect(variant).toHaveLength(4);
      for (const text of variant) expect(text).toMatch(/^Keep a handoff summary of the turns, about \d+ tokens, every line as it was\.$/);
      // The turns it folds are the same for both.
      expect(summaries.every((request) => lastUserText(request).includes("<turns"))).toBe(true);
      const missing = await evalCli(["--prompt", "/nonexistent/prompt.txt"], env);
      expect(missing.code).toBe(1);
      expect(missing.err).toMatch(/--prompt \/nonexistent\/prompt\.txt: ENOENT/);
    } finally {
      keeper();
    }
  });

  it("--min-score: exit 3 naming the columns under it", async () => {
    const keeperOnly = await evalCli(["--summarizer", "keeper", "--min-score", "100"], env);
    expect(keeperOnly.code).toBe(0);
    const both = await evalCli(["--summarizer", "keeper,dropper", "--min-score", "90"], env);
    expect(both.code).toBe(3);
    expect(both.err).toMatch(/^under --min-score 90%: dropper$/m);
  });

  it("fails loudly, naming the probe, when an answer is empty or the model errs", async () => {
    const empty = llm.route((request) => !isSummarizerRequest(request) && lastUserText(request).includes("What is the ad budget"), { text: "" });
    const broken = llm.route((request) => !isSummarizerRequest(request) && lastUserText(request).includes("Which payment provider"), httpError.badRequest("Invalid 'messages': boom"));
    try {
      const run = await evalCli(["--summarizer", "keeper"], env);
      expect(run.code).toBe(2);
      expect(run.err).toMatch(/eval failed: 2 probes got no answer/);
      expect(run.err).toMatch(/keeper: probe ad-budget: empty answer/);
      expect(run.err).toMatch(/keeper: probe payment-provider: the model failed/);
      expect(run.out).toContain("Probes without an answer (the run failed):");
    } finally {
      empty();
      broken();
    }
  });

  it("fails loudly when the summarizer fails: the main model's fallback summary would not measure it", async () => {
    const down = llm.route((request) => isSummarizerRequest(request) && summarizerModel(request) === "fake-broken", httpError.server(500));
    try {
      const run = await evalCli(["--summarizer", "broken", "--compact-after", "1"], env);
      expect(run.code).toBe(2);
      expect(run.err).toMatch(/eval failed: the summarizer fake-broken failed in the compaction after day 1 \(2026-11-02\) and the main model fake-main wrote the summary instead/);
    } finally {
      down();
    }
  });

  it("fails loudly when a compaction does not happen (every summarizer fails)", async () => {
    const down = llm.route((request) => isSummarizerRequest(request) && ["fake-broken", "fake-main"].includes(summarizerModel(request)), httpError.server(500));
    try {
      const run = await evalCli(["--summarizer", "broken", "--compact-after", "1"], env);
      expect(run.code).toBe(2);
      expect(run.err).toMatch(/eval failed: the compaction after day 1 \(2026-11-02\) did not compact/);
    } finally {
      down();
    }
  });

  it("refuses an unknown summarizer or day, and guides when no model is configured", async () => {
    const unknown = await evalCli(["--summarizer", "nope"], env);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/--summarizer nope: no such model in the catalogue \(main, keeper, dropper, broken\)/);
    const day = await evalCli(["--compact-after", "9"], env);
    expect(day.code).toBe(1);
    expect(day.err).toMatch(/the dialogue has days 1 to 6/);
    const bare = await evalCli([], { LOG_LEVEL: "silent", LONGHAUL_CONFIG_FILE: writeConfigFile("") });
    expect(bare.code).toBe(1);
    expect(bare.err).toMatch(/No model is configured/);
    expect(bare.err).toMatch(/LLM_BASE_URL/);
  });
});

describe("npm run eval as a process", () => {
  it("exits 1 with guidance when no model is configured", async () => {
    const cli = spawnApp({ LOG_LEVEL: "silent", LONGHAUL_CONFIG_FILE: writeConfigFile("") }, { entry: "src/cli/eval.ts" });
    expect(await cli.exited()).toBe(1);
    expect(cli.stderr()).toMatch(/No model is configured: the eval talks to the same models as the bot/);
    expect(cli.stdout()).toBe("");
  });

  it("prints the table and exits 2 naming the probe whose answer is empty", async () => {
    const llm = await startFakeLlm();
    try {
      llm.route(isSummarizerRequest, retentiveSummarizer);
      llm.route((request) => lastUserText(request).includes("Who told the team that Apple rejected"), { text: "   " });
      llm.setHandler(retrievalModel(dialogue.probes));
      const cli = spawnApp(
        { LLM_BASE_URL: llm.url, LLM_API_KEY: TEST_API_KEY, LLM_MODEL: "gpt-4o-mini", LLM_MAX_RETRIES: "0", LOG_LEVEL: "silent", LONGHAUL_CONFIG_FILE: writeConfigFile("") },
        { entry: "src/cli/eval.ts", args: ["--compact-after", "3"] },
      );
      expect(await cli.exited()).toBe(2);
      expect(cli.stdout()).toMatch(/^overall\s+\d+\/\d+ \d+%$/m);
      expect(cli.stderr()).toMatch(/configured: probe rejection-reporter: empty answer \(finish_reason stop\)/);
    } finally {
      await llm.close();
    }
  });
});
