/**
 * A property test's run count: `runs`, scaled by `PROPERTY_RUNS_SCALE` (default 1). `npm run
 * mutation` sets 0.3: StrykerJS re-runs the covering tests for every mutant, and the full counts
 * would take hours on a shared machine. `npm test` always runs the full counts.
 */
export const propertyRuns = (runs: number): number => Math.max(1, Math.round(runs * Number(process.env.PROPERTY_RUNS_SCALE ?? "1")));
