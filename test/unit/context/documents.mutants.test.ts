/**
 * src/context/documents.ts at its edges (issue #31 item 7, the survivors of its first Stryker
 * run): which lines are a document's start and end markers, and what a cut adds at each edge
 * of the head it keeps and the tail it keeps — `close` (the document's own end marker, after
 * the head) and `reopen` (its own start marker, before the tail), exactly what clipAround
 * (prune.ts) writes into the cut message.
 */
import { describe, expect, it } from "vitest";
import { bridgeDocuments, documentSpans } from "../../../src/context/documents.js";
import { fenceDocuments, serializeMessage } from "../../../src/context/summary-prompt.js";

const START = "[file a.txt, 1 KB, its text:]\n";
const END = "\n[end of a.txt]";
const BEFORE = "the words the user typed before the file\n";
const BODY = "line one of the file\nline two of the file\nline three of the file";
const AFTER = "\nthe words the user typed after the file";
const TEXT = `${BEFORE}${START}${BODY}${END}${AFTER}`;

const spanOf = (text: string) => {
  const spans = documentSpans(text);
  expect(spans).toHaveLength(1);
  return spans[0]!;
};

describe("documentSpans: which lines open and close a document", () => {
  it("the spans of a message with one document, for the cases below", () => {
    expect(spanOf(TEXT)).toEqual({
      start: BEFORE.length,
      from: BEFORE.length + START.length,
      end: BEFORE.length + START.length + BODY.length,
      stop: BEFORE.length + START.length + BODY.length + END.length,
    });
  });

  it("a message that starts with the marker's suffix still has its document found after it", () => {
    const text = `, its text:]\n${START}${BODY}${END}`;
    expect(spanOf(text)).toMatchObject({ start: 13, from: 13 + START.length });
  });

  it("a line ending in ', its text:]' without a '[' opens no document, after a document either", () => {
    const text = `${START}${BODY}${END}\nmine\nmy notes, its text:]\nmy own words`;
    expect(documentSpans(text)).toHaveLength(1);
    const fenced = fenceDocuments(text);
    expect(fenced.lastIndexOf("</document>")).toBeLessThan(fenced.indexOf("my notes"));
    expect(fenced.endsWith("my own words")).toBe(true);
  });

  it("an end marker before the document's start does not end it: the document runs to the text's end", () => {
    const text = `note\n[end of a.txt]\n${START}${BODY}`;
    const span = spanOf(text);
    expect(span.end).toBeUndefined();
    expect(span.stop).toBe(text.length);
  });

  it("a document whose text is empty ends at its end marker right after the start marker", () => {
    const text = `${START}${END}\nmine`;
    expect(spanOf(text)).toEqual({ start: 0, from: START.length, end: START.length, stop: START.length + END.length });
  });
});

describe("bridgeDocuments: what a cut adds at the head's end and the tail's start", () => {
  const span = spanOf(TEXT);
  const nothing = { close: "", reopen: "" };

  it("a head that ends right after the start marker closes the document (its end cut out)", () => {
    expect(bridgeDocuments(TEXT, span.from, span.stop + 5)).toEqual({ close: END, reopen: "" });
  });

  it("a head that ends right after the end marker holds the whole document: nothing added", () => {
    expect(bridgeDocuments(TEXT, span.stop, span.stop + 5)).toEqual(nothing);
  });

  it("a tail that starts at the end marker's '[' shows it: no second end marker after the head", () => {
    expect(bridgeDocuments(TEXT, span.from + 5, (span.end ?? 0) + 1)).toEqual(nothing);
    expect(bridgeDocuments(TEXT, span.from + 5, span.end ?? 0)).toEqual(nothing);
    expect(bridgeDocuments(TEXT, span.from + 5, (span.end ?? 0) + 2)).toEqual({ close: END, reopen: "" });
  });

  it("a document without an end marker, cut through: nothing to close, nothing to reopen", () => {
    const open = `${BEFORE}${START}${BODY}${BODY}`;
    const openSpan = spanOf(open);
    expect(bridgeDocuments(open, openSpan.from + 5, open.length - 5)).toEqual(nothing);
    // Its start cut out, its text going on in the tail: opened again there.
    expect(bridgeDocuments(open, 3, open.length - 5)).toEqual({ close: "", reopen: START });
  });

  it("a document wholly in the head, or wholly cut out, is not opened again in the tail", () => {
    expect(bridgeDocuments(TEXT, span.stop + 2, TEXT.length - 3)).toEqual(nothing);
    expect(bridgeDocuments(TEXT, 3, TEXT.length - 3)).toEqual(nothing);
  });

  it("a tail that starts at the end marker shows none of the file's text: not opened again", () => {
    expect(bridgeDocuments(TEXT, 3, span.end ?? 0)).toEqual(nothing);
    expect(bridgeDocuments(TEXT, 3, (span.end ?? 0) - 1)).toEqual({ close: "", reopen: START });
  });

  it("a document that starts in the tail, or right at its start, is shown with its own marker: nothing added", () => {
    expect(bridgeDocuments(TEXT, 3, 10)).toEqual(nothing);
    expect(bridgeDocuments(TEXT, 3, span.start)).toEqual(nothing);
    expect(bridgeDocuments(TEXT, 3, span.start + 1)).toEqual({ close: "", reopen: START });
  });
});

describe("the summarizer's clip bridges a user message's documents only", () => {
  it("an assistant's long reply that quotes a file's start marker gets no end marker it never wrote", () => {
    const quoted = Array.from({ length: 300 }, (_, index) => `quoted row ${index + 1}`).join("\n");
    const content = `${START}${quoted}${END}\n${Array.from({ length: 200 }, (_, index) => `my comment ${index + 1}`).join("\n")}`;
    const entry = serializeMessage({ id: "m7", role: "assistant", content }, new Map());
    expect(entry).toContain('omitted; recall("m7")');
    expect(entry).not.toContain("quoted row 300");
    expect(entry).not.toContain("[end of a.txt]");
    // The same text from the user: the cut closes the file's fence with its own end marker.
    expect(serializeMessage({ id: "m7", role: "user", content }, new Map())).toContain("[end of a.txt]");
  });
});
