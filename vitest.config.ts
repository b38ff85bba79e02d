import { defineConfig } from "vitest/config";

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
        },
      },
    ],
  },
});
