import { onTestFinished } from "vitest";

/**
 * For inside a test: closes `resource` once the test has finished, passed or failed. What is
 * given last is closed first (a pipeline before the fake model it calls).
 */
export function closeAfterTest<T extends { close(): Promise<unknown> }>(resource: T): T {
  onTestFinished(async () => {
    await resource.close();
  });
  return resource;
}
