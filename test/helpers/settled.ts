const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until `count` has not changed for `quietMs` (requests already in flight have landed),
 * at most `deadlineMs`, and returns it. For "and then nothing more" checks without a fixed sleep.
 */
export async function settled(count: () => number, quietMs: number, deadlineMs = 10_000): Promise<number> {
  let last = count();
  let since = Date.now();
  const deadline = Date.now() + deadlineMs;
  while (Date.now() - since < quietMs && Date.now() < deadline) {
    await sleep(10);
    if (count() !== last) {
      last = count();
      since = Date.now();
    }
  }
  return last;
}
