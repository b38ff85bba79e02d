import { defineConfig } from "vitest/config";

/**
 * The tests StrykerJS runs against mutants of src/context (`npm run mutation`): the context
 * engine's unit and property tests, and the media unit tests that cover image-tokens.ts — no
 * Redis, no child processes, no global setup. test/unit/session-context/session-context.test.ts also
 * reaches src/context, through the session, but its simulations take ~10 s per mutant.
 */
export default defineConfig({
  test: {
    include: ["test/unit/context/**/*.test.ts", "test/unit/media/media.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 1,
  },
});
