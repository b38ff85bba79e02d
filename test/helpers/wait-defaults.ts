/**
 * vi.waitFor's own default gives a condition 1 s. That is a wall-clock limit: on this 2-core
 * machine, loaded by the other test file running beside it, correct tests ran past it (seen in
 * discord-send's typing test and preview-fence). Every call without its own timeout gets 10 s;
 * a condition that holds still returns at once, so a passing test is no slower.
 */
import { vi } from "vitest";

const DEFAULT_TIMEOUT_MS = 10_000;
const original = vi.waitFor.bind(vi);

vi.waitFor = ((callback: Parameters<typeof vi.waitFor>[0], options?: Parameters<typeof vi.waitFor>[1]) =>
  original(callback, typeof options === "number" ? options : { timeout: DEFAULT_TIMEOUT_MS, ...options })) as typeof vi.waitFor;
