import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { htmlToPlainText, renderMarkdown } from "../../../../src/adapters/telegram/render.js";
import { parseTelegramHtml } from "../../../fakes/fake-telegram.js";

function isSubsequence(needle: string, haystack: string): boolean {
  const wanted = Array.from(needle);
  let at = 0;
  for (const character of haystack) if (character === wanted[at]) at++;
  return at === wanted.length;
}

const valid = (html: string) => expect(parseTelegramHtml(html)).not.toHaveProperty("error");

describe("renderMarkdown", () => {
  it("escapes <, > and & everywhere, so model text can never be read as a tag", () => {
    expect(renderMarkdown("if a < b && c > d then <script>alert(1)</script>")).toBe(
      "if a &lt; b &amp;&amp; c &gt; d then &lt;script&gt;alert(1)&lt;/script&gt;",
    );
  });

  it("renders bold, italic, strikethrough and inline code", () => {
    expect(renderMarkdown("**bold**, __bold__, *it*, _it_, ~~gone~~ and `a<b`")).toBe(
      "<b>bold</b>, <b>bold</b>, <i>it</i>, <i>it</i>, <s>gone</s> and <code>a&lt;b</code>",
    );
  });

  it("nests emphasis and keeps markup inside code literal", () => {
    expect(renderMarkdown("***both*** and **bold with *italic* inside**")).toBe("<b><i>both</i></b> and <b>bold with <i>italic</i> inside</b>");
    expect(renderMarkdown("`**not bold**`")).toBe("<code>**not bold**</code>");
  });

  it("renders fenced code blocks with their language, escaped", () => {
    expect(renderMarkdown("Look:\n```python\nif x < 3:\n    print('a & b')\n```\ndone")).toBe(
      'Look:\n<pre><code class="language-python">if x &lt; 3:\n    print(\'a &amp; b\')</code></pre>\ndone',
    );
    expect(renderMarkdown("```\nplain\n```")).toBe("<pre>plain</pre>");
  });

  it("runs an unclosed fence to the end instead of leaking markup", () => {
    expect(renderMarkdown("```js\nconst a = 1;\n**x**")).toBe('<pre><code class="language-js">const a = 1;\n**x**</code></pre>');
  });

  it("renders safe links and refuses unsafe schemes", () => {
    expect(renderMarkdown("[docs](https://example.com/a?b=1&c=2) and <https://x.y/z>")).toBe(
      '<a href="https://example.com/a?b=1&amp;c=2">docs</a> and <a href="https://x.y/z">https://x.y/z</a>',
    );
    expect(renderMarkdown("[click](javascript:alert(1))")).toBe("click (javascript:alert(1))");
    expect(renderMarkdown("[**bold** link](https://e.com)")).toBe('<a href="https://e.com"><b>bold</b> link</a>');
  });

  it("turns headings, lists and quotes into what Telegram can show", () => {
    expect(renderMarkdown("## Plan\n- one\n* two\n1. first\n- [x] done\n> quoted *text*\n> more")).toBe(
      "<b>Plan</b>\n• one\n• two\n1. first\n☑ done\n<blockquote>quoted <i>text</i>\nmore</blockquote>",
    );
  });

  it("leaves identifiers and arithmetic alone", () => {
    expect(renderMarkdown("snake_case_name and 2 * 3 * 4 and file_name.py")).toBe("snake_case_name and 2 * 3 * 4 and file_name.py");
  });

  it("keeps unbalanced markdown literal", () => {
    expect(renderMarkdown("**bold without end and *half")).toBe("**bold without end and *half");
    expect(renderMarkdown("a ` lone backtick")).toBe("a ` lone backtick");
  });

  it("honours backslash escapes", () => {
    expect(renderMarkdown("\\*not italic\\*")).toBe("*not italic*");
  });

  it("always produces HTML Telegram accepts, and loses no text (property)", () => {
    const piece = fc.constantFrom("**", "*", "_", "__", "~~", "`", "```", "```py\n", "[", "](", ")", "<", ">", "&", "\\", "\n", "\n\n", "# ", "> ", "- ", "https://a.b/c", "word", " ", "é", "😀");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 60 }), (pieces) => {
        const markdown = pieces.join("");
        const html = renderMarkdown(markdown);
        valid(html);
        // Every letter of the input survives (markup characters may be consumed).
        const letters = (text: string) => text.replace(/[^a-zé😀]/gu, "");
        // A fence's info string (its language) is a label, not text.
        const withoutInfo = markdown.replace(/^( {0,3})(`{3,}|~{3,})([^`\n]*)$/gm, "$1$2");
        expect(isSubsequence(letters(withoutInfo), letters(htmlToPlainText(html, { linkUrls: true })))).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it("stays fast on adversarial input (no quadratic rescans)", () => {
    const inputs = ["*a _b ~~c `d [e ".repeat(2000), "[a ".repeat(10_000) + "]", "**a ".repeat(8000), "[a](https://e.com/x) ".repeat(5000), '[a](b "t'.repeat(5000)];
    const started = performance.now();
    for (const input of inputs) valid(renderMarkdown(input));
    expect(performance.now() - started).toBeLessThan(3000);
  });
});

describe("htmlToPlainText", () => {
  it("strips tags, decodes entities and can keep link targets", () => {
    const html = '<b>x &lt; y</b> <a href="https://e.com/?a=1&amp;b=2">here</a>';
    expect(htmlToPlainText(html)).toBe("x < y here");
    expect(htmlToPlainText(html, { linkUrls: true })).toBe("x < y here (https://e.com/?a=1&b=2)");
  });
});
