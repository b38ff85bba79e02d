/**
 * V8's heap sizing for a longhaul process (issue 32). After each full collection V8 lets the old
 * generation grow to a multiple of what survived it, up to 4× when the process allocates fast —
 * and a process carrying a bot at its platform's limit does: every turn parses its session,
 * builds a request body and streams an answer, all garbage seconds later. Measured in the load
 * bench (25 messages/s through Discord, one process): a heap snapshot under load held ~80 MB
 * live, yet the heap stood at 281–322 MB and the process at 385–422 MB RSS; with the factor
 * fixed at 1.5 the same run peaked at 205 MB of heap, 292 MB RSS (docs/benchmarks.md). The cost
 * is more full collections, which V8 marks concurrently (CPU per answered message:
 * docs/benchmarks.md).
 *
 * An operator's own `--heap-growing-percent` (node's arguments or NODE_OPTIONS) is left alone.
 */
import { setFlagsFromString } from "node:v8";

/** The old generation may grow to 1 + this / 100 times what survived the last full collection. */
export const HEAP_GROWING_PERCENT = 50;

/** → whether the flag was set here (false: the operator set it). */
export function tuneHeap(options: { execArgv?: readonly string[]; nodeOptions?: string; set?: (flags: string) => void } = {}): boolean {
  const given = [...(options.execArgv ?? process.execArgv), ...(options.nodeOptions ?? process.env.NODE_OPTIONS ?? "").split(/\s+/)];
  if (given.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg))) return false;
  (options.set ?? setFlagsFromString)(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
