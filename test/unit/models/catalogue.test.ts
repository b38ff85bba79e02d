import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../config/index.js";
import { catalogueFromConfig } from "../../../src/models/catalogue.js";
import { withPersona } from "../../../src/models/persona.js";

const withFile = (yaml: string) => {
  const file = join(mkdtempSync(join(tmpdir(), "longhaul-models-")), "longhaul.yaml");
  writeFileSync(file, yaml);
  return file;
};
const load = (yaml: string) => loadConfig({ LONGHAUL_CONFIG_FILE: withFile(yaml) });

describe("model catalogue", () => {
  it("is one model built from LLM_* when the file has no models section", () => {
    const catalogue = catalogueFromConfig(loadConfig({ LLM_MODEL: "llama3.1:8b", LLM_CONTEXT_WINDOW: "8192", LLM_PRICE_INPUT: "1" }));
    expect(catalogue.models).toEqual([{ name: "llama3.1:8b", id: "llama3.1:8b", contextWindow: 8192, prices: { input: 1, cachedInput: 0, output: 0 }, aliases: [] }]);
    expect(catalogue.default.name).toBe("llama3.1:8b");
  });

  it("reads names, aliases, prices (cached defaults to input), the default and who may use what", () => {
    const catalogue = catalogueFromConfig(load(`
models:
  default: b
  list:
    a: { id: model-a, prices: { input: 2, output: 8 }, allow: { chats: ["tg:-1"], users: ["tg:5"] } }
    b: { id: model-b, endpoint: "http://127.0.0.1:9/v1", context_window: 8192, aliases: [Bee], summarizer: a }
`));
    expect(catalogue.default.id).toBe("model-b");
    expect(catalogue.find("bee")?.name).toBe("b");
    expect(catalogue.find(" A ")?.prices).toEqual({ input: 2, cachedInput: 2, output: 8 });
    const a = catalogue.find("a")!;
    expect(catalogue.mayUse(a, { chatKeys: ["tg:-1"], userKey: "tg:9", admin: false })).toBe(true);
    expect(catalogue.mayUse(a, { chatKeys: ["tg:-2"], userKey: "tg:5", admin: false })).toBe(true);
    expect(catalogue.mayUse(a, { chatKeys: ["tg:-2"], userKey: "tg:9", admin: false })).toBe(false);
    expect(catalogue.mayUse(a, { chatKeys: ["tg:-2"], userKey: "tg:9", admin: true })).toBe(true);
    expect(catalogue.active("gone").name).toBe("b");
  });

  it("names the failing key of a bad section", () => {
    expect(() => load("models:\n  list:\n    a: { id: x, context_window: -5 }\n")).toThrow(/models\.list\.a\.context_window/);
    expect(() => load("models:\n  list:\n    a: { id: x, colour: red }\n")).toThrow(/models\.list\.a/);
    expect(() => load("models:\n  default: z\n  list:\n    a: { id: x }\n")).toThrow(/models\.default: no model "z"/);
    expect(() => load("models:\n  list:\n    a: { id: x, summarizer: q }\n")).toThrow(/models\.list\.a\.summarizer: no model "q"/);
    expect(() => load("models:\n  list:\n    a: { id: x, aliases: [b] }\n    b: { id: y }\n")).toThrow(/models\.list\.(a|b)\.aliases: "b" is already a name of/);
    expect(() => load("budgets:\n  chat: { daily: { usd: -1 } }\n")).toThrow(/budgets\.chat\.daily\.usd/);
    expect(() => load("budgets:\n  chats: { \"12\": { daily: { usd: 1 } } }\n")).toThrow(/budgets\.chats\.12/);
    expect(() => load("personas:\n  pirate: 5\n")).toThrow(/personas\.pirate/);
  });

  it("puts the persona at the end of the system prompt", () => {
    expect(withPersona("base", {})).toBe("base");
    expect(withPersona("base", { chat: { persona: "Be terse." } })).toBe("base\n\nBe terse.");
  });
});

describe("provider limits in the catalogue (models.list.<name>.limits, models.endpoints)", () => {
  it("reads a model's caps and an endpoint's caps (keyed without a trailing slash)", () => {
    const catalogue = catalogueFromConfig(load(`
models:
  list:
    a: { id: model-a, limits: { concurrent: 3, requests_per_minute: 600 } }
    b: { id: model-b, endpoint: "http://127.0.0.1:9/v1" }
  endpoints:
    "http://127.0.0.1:9/v1/": { concurrent: 2 }
`));
    expect(catalogue.find("a")?.limits).toEqual({ concurrent: 3, requestsPerMinute: 600 });
    expect(catalogue.find("b")?.limits).toBeUndefined();
    expect(catalogue.endpointLimits).toEqual({ "http://127.0.0.1:9/v1": { concurrent: 2 } });
    expect(() => load("models:\n  list:\n    a: { id: x, limits: { concurrent: 0 } }\n")).toThrow(/models\.list\.a\.limits\.concurrent/);
  });
});
