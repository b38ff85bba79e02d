import { describe, expect, it } from "vitest";
import { addFact, copiesFact, emptyDoc, normaliseFact, removeFacts, replaceFact, matcher, usedChars } from "../../../src/memory/store.js";
import { renderPins, renderSnapshot, systemBlockText } from "../../../src/memory/snapshot.js";
import { ownerOf, parseUserRef } from "../../../src/memory/owner.js";

const caps = { maxChars: 20 };

describe("memory documents", () => {
  it("adds facts with stable ids under the cap, counting code points (emoji are one each)", () => {
    let doc = emptyDoc();
    const first = addFact(doc, "u", "likes 🍵 tea", caps, 1);
    expect(first.ok && first.fact).toEqual({ id: "u1", text: "likes 🍵 tea", at: 1 });
    doc = first.doc;
    expect(usedChars(doc)).toBe(11);
    const full = addFact(doc, "u", "x".repeat(10), caps, 2);
    expect(full.ok).toBe(false);
    expect(!full.ok && full.reason).toMatch(/memory is full \(11 of 20 characters used; this fact needs 10\)/);
    const fits = addFact(doc, "u", "y".repeat(9), caps, 3);
    expect(fits.ok && fits.fact?.id).toBe("u2");
  });

  it("keeps one line per fact and refuses empty or duplicate ones", () => {
    expect(normaliseFact("  a\n\n  b\r\nc  ")).toBe("a b c");
    expect(addFact(emptyDoc(), "c", " \n ", caps, 1).ok).toBe(false);
    const once = addFact(emptyDoc(), "c", "Deploys on Thursday", caps, 1);
    const twice = addFact(once.doc, "c", "deploys on thursday", caps, 2);
    expect(twice.ok && twice.doc.facts).toHaveLength(1);
  });

  it("replaces within the cap and removes by id or text; ids are never reused", () => {
    let doc = addFact(emptyDoc(), "u", "aaaa", caps, 1).doc;
    doc = addFact(doc, "u", "bbbb", caps, 1).doc;
    expect(replaceFact(doc, "u1", "z".repeat(17), caps, 2).ok).toBe(false);
    const replaced = replaceFact(doc, "u1", "cccc", caps, 2);
    expect(replaced.ok && replaced.doc.facts.map((fact) => fact.text)).toEqual(["cccc", "bbbb"]);
    const removed = removeFacts(replaced.doc, matcher("BBB"));
    expect(removed.ok && removed.removed?.map((fact) => fact.id)).toEqual(["u2"]);
    const again = addFact(removed.doc, "u", "dddd", caps, 3);
    expect(again.ok && again.fact?.id).toBe("u3");
  });
});

describe("snapshot", () => {
  it("renders user, chat and shared sections, and pins after them", () => {
    const doc = addFact(emptyDoc(), "u", "prefers metric units", caps, 1).doc;
    expect(renderSnapshot({})).toBe("");
    expect(renderSnapshot({ user: { name: "Ada", doc } })).toMatch(/^\[Long-term memory[^\n]*\]\nAbout the user \(Ada\):\n- \[u1\] prefers metric units$/);
    const group = renderSnapshot({ chat: emptyDoc(), shared: [{ name: "Ada", doc }] });
    expect(group).toContain("About Ada (shared by them with this chat):\n- [u1] prefers metric units");
    expect(renderPins([{ id: "p1", text: "budget is 5k", at: 1 }])).toBe("[Pinned by the user — keep these in mind, exactly as written]\n- [p1] budget is 5k");
    expect(systemBlockText({ snapshot: "S", pins: [{ id: "p1", text: "x", at: 1 }] })).toBe("S\n\n[Pinned by the user — keep these in mind, exactly as written]\n- [p1] x");
    expect(systemBlockText({})).toBe("");
  });

  it("a DM reads its person's memory, a group its own", () => {
    expect(ownerOf({ chatType: "private", platform: "telegram", userId: "42", sessionKey: "tg:42" })).toEqual({ scope: "user", platform: "telegram", userId: "42" });
    expect(ownerOf({ chatType: "group", platform: "telegram", userId: "42", sessionKey: "tg:-100" })).toEqual({ scope: "chat", sessionKey: "tg:-100" });
    expect(parseUserRef("discord:123")).toEqual({ platform: "discord", userId: "123" });
    expect(parseUserRef("slack:1")).toBeUndefined();
  });
});

describe("copiesFact: a group fact that copies a member's shared one (issue 29)", () => {
  it("finds copies in other words, order or case", () => {
    const shared = "Zoe is on sick leave until Friday";
    for (const text of ["Zoe is on sick leave until Friday", "zoe IS on sick-leave until friday!", "Note: Zoe on sick leave, back Friday", "Team update: Zoe is on sick leave until Friday (she said)", "sick leave until Friday"]) {
      expect(copiesFact(text, shared), text).toBe(true);
    }
  });

  it("leaves facts about other things alone", () => {
    const shared = "Zoe is on sick leave until Friday";
    for (const text of ["Zoe likes trains", "the team meets on Fridays", "Friday", "Leave the keys at the desk", ""]) {
      expect(copiesFact(text, shared), text).toBe(false);
    }
    expect(copiesFact("anything", "")).toBe(false);
  });
});
