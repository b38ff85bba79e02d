/**
 * `recall` pages in UTF-16 units; none may end or start inside a surrogate pair (half an emoji
 * is invalid on the wire), whatever offset and length the model asks for, and following each
 * page's "offset N" hint reads the text back exactly.
 */
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../src/core/messages.js";
import { createRecallTool } from "../../../src/tools/index.js";

const hasLoneSurrogate = (text: string) => /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
const TEXT = `a${"😀✅b日本🎉".repeat(40)}z`;

function contextWith(text: string) {
  const message: ChatMessage = { id: "m7", role: "user", content: text };
  return {
    sessionKey: "tg:1", signal: new AbortController().signal, now: () => 0, timeZone: "UTC",
    transcript: { get: async (id: string) => (id === "m7" ? message : undefined), search: async () => ({ messages: [], scanned: 0, continueBefore: undefined }) },
    outputs: { read: async () => undefined },
  } as never;
}

describe("recall's pages and surrogate pairs", () => {
  it("no page holds half a pair, for every offset and small length", async () => {
    const recall = createRecallTool();
    for (let offset = 0; offset < 12; offset++) {
      for (let length = 1; length <= 5; length++) {
        const page = String(await recall.run({ id: "m7", offset, length }, contextWith(TEXT)));
        expect(hasLoneSurrogate(page), `offset ${offset}, length ${length}: ${JSON.stringify(page)}`).toBe(false);
      }
    }
  });

  it("following the pages' offsets reads the text back exactly, for odd page lengths", async () => {
    const recall = createRecallTool();
    for (const length of [3, 7, 8]) {
      let offset = 0;
      let read = "";
      for (let guard = 0; guard < 500; guard++) {
        const page = String(await recall.run({ id: "m7", offset, length }, contextWith(TEXT)));
        const body = page.slice(page.indexOf(":\n") + 2);
        const more = /\n\[\d+ more characters: recall with id "m7" and offset (\d+)\]$/.exec(body);
        read += more ? body.slice(0, more.index) : body;
        if (!more) break;
        offset = Number(more[1]);
      }
      expect(read).toBe(TEXT);
    }
  });
});
