/** The fake Bot API's HTML model holds our output to Telegram's rules (tdlib's parse_html). */
import { describe, expect, it } from "vitest";
import { parseTelegramHtml } from "../../fakes/telegram-html.js";

const ok = (html: string) => {
  const parsed = parseTelegramHtml(html);
  if ("error" in parsed) throw new Error(parsed.error);
  return parsed;
};
const error = (html: string) => (parseTelegramHtml(html) as { error?: string }).error;

describe("fake Telegram's HTML parser", () => {
  it("refuses what Telegram refuses: unknown tags, bare span, unquoted URLs, unbalanced tags", () => {
    expect(error("<p>x</p>")).toMatch(/Unsupported start tag "p"/);
    expect(error("<span>x</span>")).toMatch(/Tag "span" must have class "tg-spoiler"/);
    expect(error('<a href=https://e.com/x>x</a>')).toMatch(/Unexpected end of name token/);
    expect(error("<b>x</i>")).toMatch(/Unmatched end tag/);
    expect(error("<b>x")).toMatch(/Can't find end tag/);
    expect(error("a < b")).toMatch(/Unsupported start tag ""/);
  });

  it("accepts what Telegram accepts: name tokens, spoiler spans, nesting inside code (dropped there)", () => {
    expect(ok('<span class="tg-spoiler">s</span>').entities).toEqual([{ type: "spoiler", offset: 0, length: 1 }]);
    expect(ok("<code class=language-js>x</code>").entities[0]).toMatchObject({ type: "code", language: "js" });
    expect(ok("<code><b>x</b></code>")).toEqual({ text: "x", entities: [{ type: "code", offset: 0, length: 1 }] });
  });

  it("counts entity offsets and lengths in UTF-16 units of the parsed text", () => {
    expect(ok("&lt;<b>😀&amp;</b>")).toEqual({ text: "<😀&", entities: [{ type: "bold", offset: 1, length: 3 }] });
    expect(ok("&#128512;&nbsp;").text).toBe("😀&nbsp;");
  });

  it("drops, silently, the links Telegram drops", () => {
    expect(ok('<a href="http://localhost:3000">dash</a>')).toEqual({ text: "dash", entities: [] });
    expect(ok('<a href="ftp://e.com">f</a>').entities).toEqual([]);
    expect(ok('<a href="https://e.com"><code>npm</code></a>').entities.map((entity) => entity.type)).toEqual(["code"]);
    expect(ok('<a href="mailto:a@b.com">m</a>').entities[0]?.url).toBe("http://mailto:a@b.com/");
    expect(ok('<a href="https://Docs.Example.com/A?b=1">d</a>').entities[0]?.url).toBe("https://docs.example.com/A?b=1");
    expect(ok('<a href="tg://resolve?domain=x">t</a>').entities[0]?.url).toBe("tg://resolve?domain=x");
  });
});
