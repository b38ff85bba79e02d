import type { BeginTurnResult } from "../../src/session/store.js";

/** The claimed branch of a begun turn; fails the test for any other outcome. */
export function claimed(result: BeginTurnResult): Extract<BeginTurnResult, { status: "claimed" }> {
  if (result.status !== "claimed") throw new Error(`expected a claimed batch, got ${result.status}`);
  return result;
}
