/**
 * `fetch_url`: reads a web page for the model (issue #35 item 2). Off unless `access.tools`
 * names it for the chat (config OPTIONAL_TOOLS). The page is downloaded by the SSRF-safe fetcher
 * (src/tools/web) and turned into readable text in an isolated extraction (Readability over a
 * DOM, src/media's worker thread, with its memory and time limits); the result is capped like
 * every tool's and the rest paged through `recall`.
 */
import type { Tool } from "../registry.js";
import { FetchRefusedError, type FetchedPage, type PageFetcher } from "../web/page-fetch.js";

/** Turns a page's bytes into text, isolated (src/media extractText): `html` through Readability, `text` as is. */
export type PageToText = (kind: "html" | "text", bytes: Uint8Array, page: { charset?: string; url: string }, signal: AbortSignal) => Promise<{ text: string; truncated?: string }>;

const HTML = /^(text\/html|application\/xhtml\+xml)$/;
const TEXT = /^(text\/|application\/(json|ld\+json|xml|rss\+xml|atom\+xml|javascript|x-ndjson|yaml|x-yaml|toml)$|application\/[a-z.+-]+\+(json|xml)$)/;

export function createFetchUrlTool(options: { fetcher: PageFetcher; toText: PageToText; maxKb: number }): Tool {
  return {
    definition: {
      type: "function",
      function: {
        name: "fetch_url",
        description:
          "Read a web page (http or https) and get its readable text: the article's title, headings, paragraphs, lists, tables and links, without menus or scripts. Long pages are cut; the cut note names the recall id to read on. Public addresses only.",
        parameters: {
          type: "object",
          properties: { url: { type: "string", description: "The page's full URL, e.g. https://example.com/news/1" } },
          required: ["url"],
          additionalProperties: false,
        },
      },
    },
    async run(args, context) {
      if (typeof args.url !== "string" || args.url.trim() === "") throw new Error("pass the page's url");
      let page: FetchedPage;
      try {
        page = await options.fetcher.fetch(args.url.trim(), context.signal);
      } catch (error) {
        if (error instanceof FetchRefusedError) return { text: `Error: fetch_url did not read ${args.url}: ${error.message}`, isError: true };
        throw error;
      }
      const kind = HTML.test(page.mediaType) ? "html" : TEXT.test(page.mediaType) || page.mediaType === "" ? "text" : undefined;
      if (!kind) return { text: `Error: ${page.url} is not a web page or text (${page.mediaType}); fetch_url reads only pages and text.`, isError: true };
      const extracted = await options.toText(kind, page.bytes, { url: page.url, ...(page.charset ? { charset: page.charset } : {}) }, context.signal);
      const lines = [`URL: ${page.url}`];
      if (page.redirects.length > 0) lines.push(`(redirected from ${page.redirects[0]})`);
      if (page.truncated) lines.push(`[only the first ${options.maxKb} KB of the page were read]`);
      if (extracted.truncated) lines.push(`[text cut: ${extracted.truncated}]`);
      return `${lines.join("\n")}\n\n${extracted.text}`;
    },
  };
}
