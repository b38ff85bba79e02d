/**
 * LLM_ALTERNATE_ROLES: the request reshaped for templates that need alternating roles is judged
 * by the fake's own copy of Mistral's template check (test/fakes/provider-rules.ts), and nothing
 * the model should read is lost or reordered.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { WireMessage } from "../../../src/core/llm.js";
import { alternateRoles } from "../../../src/llm/alternate-roles.js";
import type { FakeChatRequestBody } from "../../fakes/fake-llm.js";
import { checkProviderRules } from "../../fakes/provider-rules.js";
import { propertyRuns } from "../../helpers/property-runs.js";

const accepted = (messages: readonly WireMessage[]) =>
  checkProviderRules("vllm-alternating", { model: "m", messages } as unknown as FakeChatRequestBody);

const textOf = (message: WireMessage): string =>
  typeof message.content === "string" ? message.content : (message.content ?? []).map((part) => ("text" in part ? part.text : "")).join("");

describe("alternateRoles", () => {
  it("merges neighbouring user messages (summary, kept message, flush instruction) into one, in order", () => {
    const messages: WireMessage[] = [
      { role: "system", content: "sys" },
      { role: "user", content: "[summary]" },
      { role: "user", content: "turn 1" },
      { role: "assistant", content: "a1" },
      { role: "user", content: "turn 2" },
      { role: "user", content: "save what matters" },
    ];
    expect(accepted(messages)).toBeDefined();
    const sent = alternateRoles(messages);
    expect(accepted(sent)).toBeUndefined();
    expect(sent).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "[summary]\n\nturn 1" },
      { role: "assistant", content: "a1" },
      { role: "user", content: "turn 2\n\nsave what matters" },
    ]);
  });

  it("puts a one-line turn between same-role messages separated by tool turns, and a user first", () => {
    const call = { id: "c1", type: "function" as const, function: { name: "read_file", arguments: "{}" } };
    const messages: WireMessage[] = [
      { role: "system", content: "sys" },
      { role: "assistant", content: "[summary as assistant]" },
      { role: "user", content: "turn 1" },
      { role: "assistant", content: null, tool_calls: [call] } as WireMessage,
      { role: "tool", tool_call_id: "c1", content: "file" } as WireMessage,
      { role: "user", content: "save what matters" },
    ];
    const sent = alternateRoles(messages);
    expect(accepted(sent)).toBeUndefined();
    expect(sent.map((message) => message.role)).toEqual(["system", "user", "assistant", "user", "assistant", "tool", "assistant", "user"]);
    expect(sent.filter((message) => message.role === "tool")).toHaveLength(1);
  });

  it("keeps image parts when it merges", () => {
    const image = { type: "image_url" as const, image_url: { url: "data:image/png;base64,AAAA" } };
    const sent = alternateRoles([{ role: "user", content: "look" }, { role: "user", content: [{ type: "text", text: "this" }, image] }]);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.content).toContainEqual(image);
    expect(textOf(sent[0]!)).toBe("look\n\nthis");
  });

  it("any sequence the engine can send becomes one the template accepts, with every message's text in order", () => {
    const call = (id: string) => ({ id, type: "function" as const, function: { name: "f", arguments: "{}" } });
    const item = fc.oneof(
      fc.record({ role: fc.constant("user" as const), content: fc.string({ minLength: 1, maxLength: 8 }) }),
      fc.record({ role: fc.constant("assistant" as const), content: fc.string({ minLength: 1, maxLength: 8 }) }),
      fc.constant("tool-pair" as const),
    );
    fc.assert(
      fc.property(fc.array(item, { maxLength: 14 }), fc.boolean(), (items, withSystem) => {
        const messages: WireMessage[] = withSystem ? [{ role: "system", content: "sys" }] : [];
        items.forEach((entry, index) => {
          if (entry === "tool-pair") {
            messages.push({ role: "assistant", content: null, tool_calls: [call(`c${index}`)] } as WireMessage);
            messages.push({ role: "tool", tool_call_id: `c${index}`, content: `r${index}` } as WireMessage);
          } else messages.push({ ...entry });
        });
        const sent = alternateRoles(messages);
        if (messages.some((message) => message.role !== "system")) expect(accepted(sent)).toBeUndefined();
        // Every original text, in order, in the merged request (fillers aside).
        const original = messages.map(textOf).filter((text) => text !== "");
        const merged = sent.map(textOf).join("\n\n");
        let at = 0;
        for (const text of original) {
          const found = merged.indexOf(text, at);
          expect(found).toBeGreaterThanOrEqual(0);
          at = found + text.length;
        }
        expect(sent.filter((message) => message.role === "tool")).toHaveLength(messages.filter((message) => message.role === "tool").length);
      }),
      { numRuns: propertyRuns(300) },
    );
  });
});
