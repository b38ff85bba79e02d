import { configDefaults, defineConfig } from "vitest/config";

// Options every project shares. The projects list them instead of `extends: true`, because an
// inherited `globalSetup` would run once per project (each its own Redis and child-process build)
// besides the root's run; the root config's globalSetup runs once and its `provide`d values reach
// every project.
const shared = {
  setupFiles: ["test/helpers/wait-defaults.ts"],
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: "forks",
} as const;

// Integration directories whose files run without per-file isolation, like test/unit: one
// module graph per worker instead of one per file. Each file spent ~2-6 s importing (discord.js,
// grammY, BullMQ, the tokenizer...) before its first test. Nothing in test/integration mocks a
// module, fakes timers or writes process.env, so a file sees no other file's state. Listed as
// each directory passed this way (`--no-isolate`); test/integration/streaming (its 50-chat
// send-budget test saw a final answered 429 in that run, not yet traced) stays isolated. test/e2e
// joined on 2026-12-07: its 35 files passed shared (no file mocks a module, fakes timers or writes
// process.env), in 268 s against 465 s isolated (import 26 s against 158 s, CPU 3.5 against 5.7 min;
// machine shared with other work, load 2-6 and 5-10). test/integration/cpu stays isolated too: its files measure their own process (process.cpuUsage), where a
// shared worker counts the earlier files' leftovers too (garbage collected, clients closing):
// pathological-input's 100 ms CPU bound failed in CI at 130 ms the first time it ran shared.
const SHARED_MODULE_GRAPH = [
  ...["agent", "discord", "eval", "faults", "gateway", "media", "memory", "operator", "queue", "schedule", "session", "setup", "telegram", "tools", "topology", "web"]
    .map((dir) => `test/integration/${dir}/**/*.test.ts`),
  "test/integration/*.test.ts",
  "test/e2e/**/*.test.ts",
];

export default defineConfig({
  test: {
    globalSetup: ["test/helpers/global-setup.ts"],
    // Integration and e2e files spawn processes and share one CPU pair; two files at a time
    // keeps them from starving each other's timers. The projects inherit this limit.
    maxWorkers: 2,
    projects: [
      {
        test: {
          ...shared,
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          // Unit files spend most of their time importing (the tokenizer etc., ~1.5 s a file); one
          // module graph per worker instead of one per file roughly halves test/unit's time.
          isolate: false,
        },
      },
      {
        test: {
          ...shared,
          name: "integration",
          include: ["test/integration/**/*.test.ts", "test/e2e/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...SHARED_MODULE_GRAPH],
        },
      },
      {
        test: {
          ...shared,
          name: "integration-shared",
          include: SHARED_MODULE_GRAPH,
          isolate: false,
        },
      },
    ],
  },
});
