import { defineConfig } from "vitest/config";

/**
 * The tests StrykerJS runs against mutants of src/context (`npm run mutation`): the context
 * engine's unit and property tests only — no Redis, no child processes, no global setup.
 */
export default defineConfig({
  test: {
    include: ["test/unit/context/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 1,
  },
});
