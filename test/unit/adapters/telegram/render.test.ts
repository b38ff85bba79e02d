import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { decodeEntities, displayWidth, htmlToPlainText, renderMarkdown } from "../../../../src/adapters/telegram/render.js";
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
    expect(renderMarkdown("***both*** and **bold with *italic* inside**")).toBe("<i><b>both</b></i> and <b>bold with <i>italic</i> inside</b>");
    expect(renderMarkdown("`**not bold**`")).toBe("<code>**not bold**</code>");
  });

  it("renders fenced code blocks with their language, escaped", () => {
    expect(renderMarkdown("Look:\n```python\nif x < 3:\n    print('a & b')\n```\ndone")).toBe(
      'Look:\n<pre><code class="language-python">if x &lt; 3:\n    print(\'a &amp; b\')</code></pre>\ndone',
    );
    expect(renderMarkdown("```\nplain\n```")).toBe("<pre>plain</pre>");
  });

  it("keeps code blocks indented four spaces, and fences inside lists", () => {
    expect(renderMarkdown("Example:\n\n    const a = 1;\n    # not a heading\n\nafter")).toBe("Example:\n\n<pre>const a = 1;\n# not a heading</pre>\n\nafter");
    expect(renderMarkdown("1. Run:\n\n    ```sh\n    make\n    ```")).toContain('<pre><code class="language-sh">make</code></pre>');
  });

  it("renders a table as an aligned monospace block", () => {
    expect(renderMarkdown("| name | n |\n|---|--:|\n| **ab** | 1 |\n| c | 22 |")).toBe("<pre>name │ n\n─────┼───\nab   │ 1\nc    │ 22</pre>");
  });

  it("keeps a link's URL in a table cell (no link works in the monospace block)", () => {
    const html = renderMarkdown("| site | note |\n|---|---|\n| [docs](https://example.com/docs) | see <https://x.y/z> |");
    expect(html).toContain("docs (https://example.com/docs)");
    // A bare URL is not written twice.
    expect(html).toContain("see https://x.y/z");
    expect(html).not.toContain("https://x.y/z (");
  });

  it("aligns table columns by display width: CJK characters and emoji take two columns", () => {
    expect(displayWidth("東京")).toBe(4);
    expect(displayWidth("👍🏽")).toBe(2);
    expect(displayWidth("🇯🇵")).toBe(2);
    expect(displayWidth("café")).toBe(4);
    const html = renderMarkdown("| city | ok |\n|---|---|\n| 東京 | 👍 |\n| Paris | no |");
    const lines = decodeEntities(html.replace(/<\/?pre>/g, "")).split("\n");
    // Every separator sits in the same column on screen.
    const columnOfBar = (line: string) => displayWidth(line.slice(0, line.search(/[│┼]/)));
    expect(lines.map(columnOfBar)).toEqual([6, 6, 6, 6]);
  });

  it("runs an unclosed fence to the end instead of leaking markup", () => {
    expect(renderMarkdown("```js\nconst a = 1;\n**x**")).toBe('<pre><code class="language-js">const a = 1;\n**x**</code></pre>');
  });

  it("renders safe links and refuses unsafe schemes", () => {
    expect(renderMarkdown("[docs](https://example.com/a?b=1&c=2) and <https://x.y/z>")).toBe(
      '<a href="https://example.com/a?b=1&amp;c=2">docs</a> and <a href="https://x.y/z">https://x.y/z</a>',
    );
    expect(renderMarkdown("[click](javascript:alert(1))")).not.toContain("<a");
    expect(renderMarkdown("[**bold** link](https://e.com)")).toBe('<a href="https://e.com"><b>bold</b> link</a>');
    expect(renderMarkdown("[open](tg://resolve?domain=durov)")).toBe('<a href="tg://resolve?domain=durov">open</a>');
  });

  it("writes out the URL of every link Telegram would drop, so it stays readable", () => {
    expect(renderMarkdown("[dashboard](http://localhost:3000)")).toBe("dashboard (http://localhost:3000)");
    expect(renderMarkdown("<http://intranet/x>")).toBe("http://intranet/x");
    expect(renderMarkdown("[write to us](mailto:team@example.com) or <ops@example.com>")).toBe("write to us (team@example.com) or ops@example.com");
    expect(renderMarkdown("[files](ftp://example.com/f)")).toBe("files (ftp://example.com/f)");
    // Telegram drops a link around code: the label loses its code style, the link stays.
    expect(renderMarkdown("[`npm test`](https://docs.example.com/t)")).toBe('<a href="https://docs.example.com/t">npm test</a>');
    for (const markdown of ["[dashboard](http://localhost:3000)", "[x](http://127.0.0.1:8080/a)", "[`c`](https://e.com)"]) {
      const html = renderMarkdown(markdown);
      const seen = parseTelegramHtml(html) as { text: string; entities: Array<{ url?: string }> };
      const url = /\((.*)\)/.exec(markdown)?.[1] ?? "";
      const reachable = seen.text.includes(url) || seen.entities.some((entity) => entity.url?.startsWith(url));
      expect(reachable).toBe(true);
    }
  });

  it("turns headings, lists and quotes into what Telegram can show", () => {
    expect(renderMarkdown("## Plan\n- one\n* two\n\n1. first\n\n- [x] done\n- [ ] open\n\n> quoted *text*\n> more")).toBe(
      "<b>Plan</b>\n• one\n• two\n\n1. first\n\n☑ done\n☐ open\n\n<blockquote>quoted <i>text</i>\nmore</blockquote>",
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
        // A fence's info string (its language) is a label, not text; a tilde fence's may hold backticks.
        const withoutInfo = markdown.replace(/(`{3,})[^`\n]*$|(~{3,}).*$/gm, "$1$2");
        expect(isSubsequence(letters(withoutInfo), letters(htmlToPlainText(html, { linkUrls: true })))).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it("renders adversarial input validly", () => {
    const inputs = ["*a _b ~~c `d [e ".repeat(2000), "[a ".repeat(10_000) + "]", "**a ".repeat(8000), "[a](https://e.com/x) ".repeat(5000), '[a](b "t'.repeat(5000)];
    for (const input of inputs) valid(renderMarkdown(input));
  });
});

describe("htmlToPlainText", () => {
  it("strips tags, decodes entities and can keep link targets", () => {
    const html = '<b>x &lt; y</b> <a href="https://e.com/?a=1&amp;b=2">here</a>';
    expect(htmlToPlainText(html)).toBe("x < y here");
    expect(htmlToPlainText(html, { linkUrls: true })).toBe("x < y here (https://e.com/?a=1&b=2)");
  });
});
