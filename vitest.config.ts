import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    setupFiles: ["test/helpers/wait-defaults.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Integration and e2e files spawn processes and share one CPU pair; two files at a time
    // keeps them from starving each other's timers.
    maxWorkers: 2,
  },
});
