/**
 * What a voice reply says of an answer (docs/media.md, "Voice replies"): the model's Markdown as
 * plain sentences. Code blocks and tables are not read aloud: each becomes "(code in the text)"
 * or "(table in the text)", and a link is "(link in the text)" — the text goes out with the voice
 * then. Parsed with markdown-it (the parser the Telegram renderer uses), so what counts as a code
 * block or a table is what a reader sees as one. Pure.
 */
import MarkdownIt from "markdown-it";
import type { Token } from "markdown-it";

const markdown = new MarkdownIt("default", { html: false, linkify: true, typographer: false });

export const CODE_MARK = "(code in the text)";
export const TABLE_MARK = "(table in the text)";
export const LINK_MARK = "(link in the text)";
export const REST_MARK = "The rest is in the text.";

export interface SpokenText {
  /** What to speak: sentences, one block a line. Empty: nothing worth speaking (no words). */
  text: string;
  /** Code, a table or a link was left out: the reader needs the text beside the voice. */
  omitted: boolean;
  /** Longer than `maxChars`: cut at a sentence end, with REST_MARK after it. */
  cut: boolean;
}

/**
 * Only this much of an answer is parsed (per character spoken): parsing is what costs (15,000
 * characters held the event loop 54 ms), and no more than `maxChars` is spoken anyway.
 */
const PARSED_PER_SPOKEN = 4;

export function spokenText(answer: string, maxChars: number): SpokenText {
  const parsedChars = maxChars * PARSED_PER_SPOKEN;
  const head = answer.length > parsedChars ? answer.slice(0, parsedChars).toWellFormed() : answer;
  const shaped = shape(head, maxChars);
  if (head === answer || shaped.text === "" || shaped.cut) return shaped;
  // Whatever was not parsed is not spoken: say so, as for a cut.
  const room = maxChars - REST_MARK.length - 1;
  return { text: `${shaped.text.length <= room ? shaped.text : cutAtSentence(shaped.text, room)} ${REST_MARK}`, omitted: shaped.omitted, cut: true };
}

function shape(answer: string, maxChars: number): SpokenText {
  const blocks: string[] = [];
  let omitted = false;
  const mark = (text: string) => {
    omitted = true;
    if (blocks.at(-1) !== text) blocks.push(text);
  };
  const tokens = markdown.parse(answer, {});
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.type === "fence" || token.type === "code_block") mark(CODE_MARK);
    else if (token.type === "table_open") {
      while (index < tokens.length && tokens[index]!.type !== "table_close") index++;
      mark(TABLE_MARK);
    } else if (token.type === "inline") {
      const line = inlineText(token.children ?? [], () => (omitted = true)).replace(/\s+/g, " ").trim();
      if (line === "") continue;
      // A heading or a list item without an end of its own is a sentence of its own when heard.
      const ended = /[.!?:;…]$/.test(line) || tokens[index + 1]?.type !== "heading_close" ? line : `${line}.`;
      blocks.push(ended);
    }
  }
  const whole = blocks.join("\n");
  if (!/\p{L}|\p{N}/u.test(whole.replaceAll(CODE_MARK, "").replaceAll(TABLE_MARK, "").replaceAll(LINK_MARK, ""))) {
    return { text: "", omitted, cut: false };
  }
  if (whole.length <= maxChars) return { text: whole, omitted, cut: false };
  return { text: `${cutAtSentence(whole, maxChars - REST_MARK.length - 1)} ${REST_MARK}`, omitted, cut: true };
}

function inlineText(children: readonly Token[], onLink: () => void): string {
  let text = "";
  for (let index = 0; index < children.length; index++) {
    const child = children[index]!;
    switch (child.type) {
      case "text":
      case "code_inline":
        text += child.content;
        break;
      case "softbreak":
      case "hardbreak":
        text += " ";
        break;
      case "image":
        text += child.content;
        break;
      case "link_open": {
        // A bare URL (linkify) is no word to speak; a named link keeps its words.
        const close = children.findIndex((candidate, at) => at > index && candidate.type === "link_close");
        const inner = children.slice(index + 1, close < 0 ? undefined : close);
        const words = inner.map((part) => part.content).join("");
        const href = String(child.attrGet("href") ?? "");
        if (child.markup === "linkify" || words === href || words === href.replace(/^mailto:/, "")) {
          onLink();
          text += LINK_MARK;
          index = close < 0 ? children.length : close;
        }
        break;
      }
      default:
        break;
    }
  }
  return text;
}

/** The longest head of `text` within `limit` that ends a sentence (or a line, or at least a word). */
function cutAtSentence(text: string, limit: number): string {
  const head = text.slice(0, limit);
  const sentence = Math.max(...[". ", "! ", "? ", "\n"].map((end) => head.lastIndexOf(end)));
  if (sentence >= limit / 2) return head.slice(0, sentence + 1).trim();
  const word = head.lastIndexOf(" ");
  return (word > 0 ? head.slice(0, word) : head).toWellFormed().trim();
}
