/**
 * The house's layering (.dependency-cruiser.cjs) holds on src/ and workers/, type imports
 * included; and the rules themselves fire on a small tree built to break each of them, so a
 * rule that silently stopped matching (a renamed folder, a parser that drops type imports)
 * fails here too.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { parseSync } from "@swc/core";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url).pathname;
const cli = join(root, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");
const config = join(root, ".dependency-cruiser.cjs");

function cruise(cwd: string, paths: string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [cli, ...paths, "--config", config, "--output-type", "err"], {
    cwd, encoding: "utf8", timeout: 120_000, env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
  });
  // One line per violation, whatever the terminal: colours off, a cycle's wrapped path joined.
  const output = `${result.stdout}${result.stderr}`.replace(/\u001b\[[0-9;]*m/g, "").replace(/ →\s+/g, " → ");
  return { status: result.status, output };
}

/** Every TypeScript file under `directory`. */
function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.[cm]?ts$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
}

/**
 * The files that write an `import("…")` type. dependency-cruiser's swc visitor sees one only as a
 * whole parameter or property annotation (not in an alias, a union, a generic argument, `typeof`
 * or `as`), so such an arrow — a cycle, an SDK in the wrong room — would pass unseen; `import
 * type` says the same and is always seen, so the house writes that instead.
 */
function importTypes(files: readonly string[]): string[] {
  return files.filter((file) => JSON.stringify(parseSync(readFileSync(file, "utf8"), { syntax: "typescript" })).includes('"type":"TsImportType"'));
}

describe("layering (dependency-cruiser)", () => {
  it("no module writes an import(\"…\") type (arrows the cruiser could miss)", () => {
    const files = [...sourceFiles(join(root, "src")), ...sourceFiles(join(root, "workers")), ...sourceFiles(join(root, "config"))];
    expect(files.length).toBeGreaterThan(200);
    expect(importTypes(files)).toEqual([]);
  });

  it("src/ and workers/ break no rule: no cycles, SDKs in their rooms, lower rooms below upper ones", () => {
    const { status, output } = cruise(root, ["src", "workers"]);
    // On failure the message lists each violation as `error <rule>: <from> → <to>`.
    expect(output).toContain("no dependency violations found");
    expect(status, output).toBe(0);
  });

  it("docs/architecture.md's room map is the one the code draws (npm run deps:graph)", () => {
    const result = spawnSync(process.execPath, [join(root, "node_modules/tsx/dist/cli.mjs"), "scripts/deps-graph.ts", "--check"], { cwd: root, encoding: "utf8", timeout: 120_000 });
    expect(result.status, `${result.stdout}${result.stderr}`).toBe(0);
  });

  describe("each rule fires on a tree that breaks it", () => {
    const fixture = mkdtempSync(join(tmpdir(), "longhaul-layering-"));
    afterAll(() => rmSync(fixture, { recursive: true, force: true }));
    const files: Record<string, string> = {
      "tsconfig.json": JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true } }),
      // A cycle through type imports only.
      "src/agent/turn-a.ts": 'import type { B } from "./turn-b.js";\nexport interface A { b?: B }\n',
      "src/agent/turn-b.ts": 'import type { A } from "./turn-a.js";\nexport interface B { a?: A }\n',
      // core reaching up; context reaching past core; a lower room importing the agent.
      "src/core/shared.ts": 'import type { A } from "../agent/turn-a.js";\nexport type Shared = A;\n',
      "src/context/engine.ts": 'import type { Shared } from "../core/shared.js";\nimport type { Store } from "../session/store.js";\nexport type E = [Shared, Store];\n',
      "src/session/store.ts": "export interface Store { id: string }\n",
      "src/models/router.ts": 'import type { A } from "../agent/turn-a.js";\nimport type { E } from "../context/engine.js";\nexport type R = [A, E];\n',
      // An adapter reaching the pipeline, and an SDK outside its room.
      "src/adapters/telegram/intake.ts": 'import type { Store } from "../../session/store.js";\nimport type { R } from "../../models/router.js";\nexport type I = [Store, R];\n',
      "src/tools/fetch.ts": 'import { Bot } from "grammy";\nimport { Queue } from "bullmq";\nimport type { I } from "../adapters/telegram/intake.js";\nexport const t: [unknown, unknown, I?] = [Bot, Queue];\n',
      // A command importing the orchestrator; a module nothing imports and that imports nothing.
      "src/agent/run-segments.ts": 'import type { A } from "./turn-a.js";\nexport type S = A;\n',
      "src/agent/commands/run-command.ts": 'import type { S } from "../run-segments.js";\nimport type { T } from "../../tools/fetch.js";\nexport type C = [S, T];\n',
      "src/media/lonely.ts": "export const lonely = 1;\n",
      // An SDK's types under another name, and a file type the resolver must know.
      "src/agent/wire.ts": 'import type { APIMessage } from "discord-api-types/v10";\nimport type { Late } from "./late.mjs";\nexport type W = [APIMessage, Late];\n',
      "src/agent/late.mts": 'import type { Shared } from "../core/shared.js";\nexport type Late = Shared;\n',
      "src/agent/missing.ts": 'import type { Gone } from "./nowhere.js";\nimport type { W } from "./wire.js";\nexport type M = [Gone, W];\n',
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(fixture, path)), { recursive: true });
      writeFileSync(join(fixture, path), text);
    }

    it("names the rule and the offending arrow, and exits non-zero", () => {
      const { status, output } = cruise(fixture, ["src"]);
      expect(status).not.toBe(0);
      const expected = [
        "no-circular: src/agent/turn-a.ts → src/agent/turn-b.ts → src/agent/turn-a.ts",
        "core-imports-nothing-of-ours: src/core/shared.ts → src/agent/turn-a.ts",
        "context-only-core: src/context/engine.ts → src/session/store.ts",
        "rooms-below-the-agent: src/models/router.ts → src/agent/turn-a.ts",
        "adapters-not-the-pipeline: src/adapters/telegram/intake.ts → src/session/store.ts",
        "adapters-not-the-pipeline: src/adapters/telegram/intake.ts → src/models/router.ts",
        "sdk-owner-grammy: src/tools/fetch.ts → grammy",
        "sdk-owner-bullmq: src/tools/fetch.ts → bullmq",
        "commands-not-the-orchestrator: src/agent/commands/run-command.ts → src/agent/run-segments.ts",
        "no-orphans: src/media/lonely.ts",
        "sdk-owner-discord.js: src/agent/wire.ts → discord-api-types/v10",
        "not-to-unresolvable: src/agent/missing.ts → ./nowhere.js",
      ];
      for (const line of expected) expect(output).toContain(`error ${line}`);
      // The .mts file is cruised: its arrow into core is there (wire → late → core), no orphan.
      expect(output).not.toContain("no-orphans: src/agent/late.mts");
    });

    it("finds an import(\"…\") type wherever it is written", () => {
      const probe = join(fixture, "src/agent/probe.ts");
      writeFileSync(probe, 'export type P = Array<import("./turn-a.js").A> | undefined;\n');
      expect(importTypes([probe, join(fixture, "src/agent/turn-a.ts")])).toEqual([probe]);
    });
  });
});
