import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../config/index.js";
import { silentLogger } from "../../../src/logger.js";
import { createModelRouter } from "../../../src/models/router.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";

let fake: FakeLlm;
beforeEach(async () => {
  fake = await startFakeLlm();
});
afterEach(async () => {
  await fake.close();
});

const routerFor = (yaml: string) => {
  const file = join(mkdtempSync(join(tmpdir(), "longhaul-limits-")), "longhaul.yaml");
  writeFileSync(file, yaml);
  return createModelRouter({ config: loadConfig({ LONGHAUL_CONFIG_FILE: file, LLM_BASE_URL: fake.url, LLM_MAX_RETRIES: "0" }), logger: silentLogger, tools: () => [] });
};

const ask = (text: string) => ({ messages: [{ role: "user" as const, content: text }] });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits (no wall-clock bound but the test's) until the fake has received `count` requests. */
async function received(count: number): Promise<void> {
  while (fake.requests.length < count) await sleep(10);
}

describe("the model router's clients respect the catalogue's caps", () => {
  it("a model with limits.concurrent 1 sends its second request only after the first is answered", async () => {
    const router = routerFor(`models:\n  list:\n    a: { id: gpt-4o-mini, limits: { concurrent: 1 } }\n`);
    fake.enqueue({ text: "first", delayMs: 1_500 }, { text: "second" });
    const llm = router.bind(router.catalogue.default).llm;
    const first = llm.complete(ask("one"));
    const second = llm.complete(ask("two"));
    // The first is held by the fake; the second must not be sent meanwhile.
    await received(1);
    await sleep(500);
    expect(fake.requests).toHaveLength(1);
    expect((await first).content).toBe("first");
    expect((await second).content).toBe("second");
    expect(fake.requests).toHaveLength(2);
  }, 20_000);

  it("an endpoint's cap holds across the models on it", async () => {
    const router = routerFor(`models:\n  list:\n    a: { id: gpt-4o-mini }\n    b: { id: gpt-4o, aliases: [bee] }\n  endpoints:\n    "${fake.url}": { concurrent: 1 }\n`);
    fake.enqueue({ text: "from a", delayMs: 1_500 }, { text: "from b" });
    const a = router.bind(router.catalogue.find("a")!).llm.complete(ask("one"));
    const b = router.bind(router.catalogue.find("b")!).llm.complete(ask("two"));
    await received(1);
    await sleep(500);
    expect(fake.requests).toHaveLength(1);
    expect([(await a).content, (await b).content]).toEqual(["from a", "from b"]);
  }, 20_000);

  it("without caps both requests are in flight at once", async () => {
    const router = routerFor(`models:\n  list:\n    a: { id: gpt-4o-mini }\n`);
    fake.enqueue({ text: "first", delayMs: 5_000 }, { text: "second", delayMs: 5_000 });
    const llm = router.bind(router.catalogue.default).llm;
    let answered = 0;
    const both = Promise.all([llm.complete(ask("one")), llm.complete(ask("two"))].map((call) => call.then(() => answered++)));
    // Both reach the fake while the first is still held: they are in flight at once.
    await received(2);
    expect(answered).toBe(0);
    await both;
  }, 20_000);
});
