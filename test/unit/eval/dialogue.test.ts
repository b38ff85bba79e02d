import { describe, expect, it } from "vitest";
import { containsTerm } from "../../../src/eval/score.js";
import { DialogueError, loadDialogue, parseDialogue, PROBE_CATEGORIES } from "../../../src/eval/dialogue.js";

describe("the eval's dialogue", () => {
  const dialogue = loadDialogue();
  const messages = dialogue.days.flatMap((day) => day.messages);

  it("is a multi-day group conversation of 150 to 300 messages with every probe category", () => {
    expect(messages.length).toBeGreaterThanOrEqual(150);
    expect(messages.length).toBeLessThanOrEqual(300);
    expect(dialogue.days.length).toBeGreaterThanOrEqual(5);
    expect(new Set(messages.filter((message) => !message.fromAssistant).map((message) => message.speaker)).size).toBeGreaterThanOrEqual(4);
    for (const category of PROBE_CATEGORIES) expect(dialogue.probes.some((probe) => probe.category === category)).toBe(true);
    expect(messages.every((message, index) => index === 0 || message.at >= messages[index - 1]!.at)).toBe(true);
    expect(dialogue.probeAt).toBeGreaterThan(messages.at(-1)!.at);
  });

  it("plants every probe's answer, and every corrected value before its correction", () => {
    for (const probe of dialogue.probes) {
      for (const item of probe.items) {
        const at = messages.findIndex((message) => item.some((alternative) => containsTerm(message.text, alternative)));
        expect(at, `${probe.id}: ${item[0]}`).toBeGreaterThanOrEqual(0);
        // An old value is said before the latest value is (the correction comes later).
        for (const old of probe.reject.filter((value) => probe.category === "corrections" && messages.some((message) => containsTerm(message.text, value)))) {
          const oldAt = messages.findIndex((message) => containsTerm(message.text, old));
          const lastNew = messages.findLastIndex((message) => item.some((alternative) => containsTerm(message.text, alternative)));
          expect(oldAt, `${probe.id}: ${old} comes before ${item[0]}`).toBeLessThan(lastNew);
        }
      }
      for (const cue of probe.cue) expect(messages.some((message) => message.text.toLowerCase().includes(cue.toLowerCase())), `${probe.id}: cue ${cue}`).toBe(true);
    }
    expect(dialogue.probes.filter((probe) => probe.category === "corrections").every((probe) => probe.reject.length > 0)).toBe(true);
  });

  it("refuses a malformed file, naming what is wrong", () => {
    const base = {
      name: "d", timeZone: "UTC", chatType: "group", assistant: "bot", probeAt: "2026-01-02 09:00",
      days: [{ date: "2026-01-01", messages: "09:00 Ann: hi\n09:01 bot: hello" }],
      probes: [{ id: "p", category: "facts", question: "q?", expect: "hi", cue: ["hi"] }],
    };
    expect(parseDialogue(base).days[0]!.messages.map((message) => [message.speaker, message.fromAssistant])).toEqual([["Ann", false], ["bot", true]]);
    expect(() => parseDialogue({ ...base, days: [{ date: "2026-01-01", messages: "9am Ann hi" }] })).toThrow(/not "HH:MM Speaker: text": 9am Ann hi/);
    expect(() => parseDialogue({ ...base, days: [{ date: "2026-01-01", messages: "09:05 Ann: hi\n09:01 bot: hello" }] })).toThrow(/in time order/);
    expect(() => parseDialogue({ ...base, probeAt: "2025-12-31 09:00" })).toThrow(/probeAt must come after/);
    expect(() => parseDialogue({ ...base, probes: [...base.probes, ...base.probes] })).toThrow(/probe id p is used twice/);
    expect(() => parseDialogue({ ...base, probes: [{ ...base.probes[0], items: [["x"]] }] })).toThrow(DialogueError);
    expect(() => parseDialogue({ ...base, probes: [{ ...base.probes[0], category: "gossip" }] })).toThrow(/probes\.0\.category/);
  });
});
