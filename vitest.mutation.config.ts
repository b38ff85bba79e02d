import { defineConfig } from "vitest/config";

/**
 * The tests StrykerJS runs against mutants of src/context (`npm run mutation`): the context
 * engine's unit and property tests (test/unit/context, image-tokens.ts included) — no Redis, no
 * child processes, no global setup, no media extraction (test/unit/media's PDF tests timed out in
 * Stryker's dry run on the shared machine and cover nothing in src/context).
 * test/unit/session-context/session-context.test.ts also reaches src/context, through the session,
 * but its simulations take ~10 s per mutant.
 * MUTATION_UNIT_ONLY=1 leaves the property tests (*.property.test.ts) out: a per-file run on the
 * shared machine is several times shorter, and its score a lower bound.
 * MUTATION_TESTS (comma-separated globs) narrows the tests to those files: tokens.ts is covered
 * by nearly every context test, and running them all for each of its mutants takes hours here.
 * MUTATION_RUN tells tokens.test.ts's CPU-time checks that the code under test is instrumented
 * (every statement counted for coverage): their 50 ms bound becomes 200 ms.
 */
export default defineConfig({
  test: {
    include: process.env.MUTATION_TESTS ? process.env.MUTATION_TESTS.split(",") : ["test/unit/context/**/*.test.ts"],
    exclude: process.env.MUTATION_UNIT_ONLY === "1" ? ["test/unit/context/**/*.property.test.ts"] : [],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    env: { MUTATION_RUN: "1" },
    pool: "forks",
    maxWorkers: 1,
  },
});
