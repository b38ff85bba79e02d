/**
 * A property test's run count: `runs`, scaled by `PROPERTY_RUNS_SCALE` (default 1). `npm run
 * mutation` sets 0.3: StrykerJS re-runs the covering tests for every mutant, and the full counts
 * would take hours on a shared machine. `npm test` (and CI, `.ci/run`) always runs the full
 * counts. A scale that is not a positive number, such as a typo or 0, is refused rather than
 * quietly running a property once (a scale of 0) or with a run count of NaN (a typo).
 */
export const propertyRuns = (runs: number): number => {
  const raw = process.env.PROPERTY_RUNS_SCALE ?? "1";
  const scale = Number(raw);
  if (!(scale > 0 && Number.isFinite(scale))) throw new Error(`PROPERTY_RUNS_SCALE must be a positive number, got "${raw}"`);
  return Math.max(1, Math.round(runs * scale));
};
