/**
 * Test-only faults, on only when the process runs with LONGHAUL_TEST_HOOKS=1 (read by main.ts):
 * a message whose text holds `[[block <ms> <point>]]` blocks this process's event loop for
 * <ms> at <point> of the first turn that carries it here — the way a pathological input freezing
 * the tokenizer would, without depending on one. Fault tests use it to stall a worker past its
 * lock at a chosen moment.
 */
import type { InboxEntry } from "../src/session/store.js";

export type TurnHookPoint = "turn-begun" | "before-commit";

export interface TurnHooks {
  at(point: TurnHookPoint, batch: readonly InboxEntry[]): void;
}

const MARKER = /\[\[block (\d+) (turn-begun|before-commit)\]\]/;

export function createTestHooks(): TurnHooks {
  const blockedOnce = new Set<string>();
  return {
    at(point, batch) {
      for (const entry of batch) {
        const match = MARKER.exec(entry.text);
        const key = `${entry.platform}:${entry.messageId}:${point}`;
        if (!match || match[2] !== point || blockedOnce.has(key)) continue;
        blockedOnce.add(key);
        blockEventLoop(Number(match[1]));
      }
    },
  };
}

/** Blocks the thread: no timer, no socket, no lock renewal runs meanwhile. */
export function blockEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
