import { defineConfig } from "vitest/config";

/**
 * The tests StrykerJS runs against mutants of src/context (`npm run mutation`): the context
 * engine's unit and property tests (test/unit/context, image-tokens.ts included) — no Redis, no
 * child processes, no global setup, no media extraction (test/unit/media's PDF tests timed out in
 * Stryker's dry run on the shared machine and cover nothing in src/context).
 * test/unit/session-context/session-context.test.ts also reaches src/context, through the session,
 * but its simulations take ~10 s per mutant.
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
