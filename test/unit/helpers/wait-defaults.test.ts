import { expect, it, vi } from "vitest";

// test/helpers/wait-defaults.ts (a setup file): vi.waitFor without a timeout waits up to 10 s, not 1 s.
it("vi.waitFor without its own timeout waits past vitest's 1 s default", async () => {
  const start = Date.now();
  await vi.waitFor(() => expect(Date.now() - start).toBeGreaterThan(1_500));
});

it("a timeout given by the caller is kept", async () => {
  const start = Date.now();
  await expect(vi.waitFor(() => expect(Date.now() - start).toBeGreaterThan(5_000), { timeout: 300 })).rejects.toThrow();
  expect(Date.now() - start).toBeLessThan(4_000);
});
