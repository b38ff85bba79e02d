/**
 * Downloads one web page for `fetch_url` with undici, within limits: a deadline for the whole
 * download (redirects included), a byte cap counted after decompression (a gzip bomb stops at the
 * cap), and a number of redirects, each hop followed here so it is checked like the first.
 *
 * SSRF: the address check sits in the connector, after DNS resolution, for every connection
 * undici opens — the first hop and every redirect: a host name is resolved by our lookup, which
 * refuses the connection when any of its addresses is not public (a name that also resolves to
 * 127.0.0.1 is refused outright), and the socket connects to the address that was checked, so a
 * second, different DNS answer (rebinding) never reaches a socket. A literal address in the URL
 * (which Node connects to without a lookup) is checked before connecting.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupAddress, LookupOptions } from "node:dns";
import { isIP } from "node:net";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { Readable } from "node:stream";
import { Agent, buildConnector, request, type Dispatcher } from "undici";
import type { AddressPolicy } from "./address-policy.js";

export interface PageFetchLimits {
  /** Bytes read at most (after decompression); the rest is left out (`truncated`). */
  maxBytes: number;
  /** Deadline of the whole download, redirects included (ms). */
  timeoutMs: number;
  /** Redirects followed at most. */
  maxRedirects: number;
}

export interface FetchedPage {
  /** Where the page was read from, after redirects. */
  url: string;
  /** The URLs redirected from, in order. */
  redirects: string[];
  status: number;
  /** The media type, lower case, without parameters (`text/html`). */
  mediaType: string;
  charset?: string;
  bytes: Uint8Array;
  /** The page was longer than `maxBytes` and was cut there. */
  truncated: boolean;
}

/** The request was refused before or while connecting (address, scheme, limits): no retry helps. */
export class FetchRefusedError extends Error {
  override readonly name = "FetchRefusedError";
}

export interface PageFetcher {
  fetch(url: string, signal: AbortSignal): Promise<FetchedPage>;
  close(): Promise<void>;
}

const USER_AGENT = "longhaul-fetch_url/0.1 (+https://github.com/longhaul; a chat assistant reading a page a user asked about)";
const ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.1";

/** Every address of a host name (the system resolver by default; tests give names of their own). */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

const systemResolve: Resolve = (hostname) => dnsLookup(hostname, { all: true });

export function createPageFetcher(limits: PageFetchLimits, policy: AddressPolicy, resolve: Resolve = systemResolve): PageFetcher {
  const guardedLookup = (hostname: string, options: LookupOptions, callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    resolve(hostname).then((all) => {
      const addresses = options.family === 4 || options.family === 6 ? all.filter((entry) => entry.family === options.family) : all;
      // Every address is checked, not only the one used: a name that also points inside is refused.
      const refused = all.find((entry) => !policy.allows(entry.address));
      if (refused) return callback(new FetchRefusedError(`${hostname} resolves to ${refused.address}, which is not a public address`), []);
      if (addresses.length === 0) return callback(new FetchRefusedError(`${hostname} has no address`), []);
      if (options.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    }, (error: NodeJS.ErrnoException) => callback(error, []));
  };
  const connect = buildConnector({ timeout: limits.timeoutMs, lookup: guardedLookup } as buildConnector.BuildOptions);
  const agent = new Agent({
    connect: (options, callback) => {
      const host = options.hostname.replace(/^\[|\]$/g, "");
      if (isIP(host) !== 0 && !policy.allows(host)) return callback(new FetchRefusedError(`${host} is not a public address`), null);
      connect(options, callback);
    },
  });

  return {
    async fetch(url, signal) {
      const deadline = AbortSignal.timeout(limits.timeoutMs);
      const both = AbortSignal.any([signal, deadline]);
      try {
        return await follow(agent, url, limits, both);
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (deadline.aborted) throw new FetchRefusedError(`the page did not arrive within ${limits.timeoutMs} ms`);
        throw unwrap(error);
      }
    },
    close: () => agent.close(),
  };
}

async function follow(agent: Dispatcher, start: string, limits: PageFetchLimits, signal: AbortSignal): Promise<FetchedPage> {
  const redirects: string[] = [];
  let url = parseWebUrl(start);
  for (;;) {
    const response = await request(url, {
      dispatcher: agent,
      method: "GET",
      headers: { "user-agent": USER_AGENT, accept: ACCEPT, "accept-encoding": "gzip, deflate, br" },
      signal,
      maxRedirections: 0,
      headersTimeout: limits.timeoutMs,
      bodyTimeout: limits.timeoutMs,
    });
    const location = header(response.headers, "location");
    if (response.statusCode >= 300 && response.statusCode < 400 && location !== undefined) {
      await response.body.dump();
      if (redirects.length >= limits.maxRedirects) throw new FetchRefusedError(`more than ${limits.maxRedirects} redirects (last to ${location})`);
      redirects.push(url.href);
      url = parseWebUrl(new URL(location, url).href);
      continue;
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      await response.body.dump();
      throw new FetchRefusedError(`the server answered HTTP ${response.statusCode}`);
    }
    const contentType = header(response.headers, "content-type") ?? "";
    const [mediaType = "", ...parameters] = contentType.split(";").map((part) => part.trim());
    const charset = parameters.find((part) => /^charset=/i.test(part))?.slice("charset=".length).replace(/^"|"$/g, "");
    const { bytes, truncated } = await readCapped(response.body, header(response.headers, "content-encoding"), limits.maxBytes);
    return { url: url.href, redirects, status: response.statusCode, mediaType: mediaType.toLowerCase(), ...(charset ? { charset } : {}), bytes, truncated };
  }
}

/** http and https only, without credentials in the URL (they would be sent to whoever answers). */
function parseWebUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FetchRefusedError(`not a URL: ${raw.slice(0, 200)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new FetchRefusedError(`only http and https URLs are fetched, not ${url.protocol}`);
  if (url.username !== "" || url.password !== "") throw new FetchRefusedError("URLs with a user name or password are not fetched");
  url.hash = "";
  return url;
}

/** Reads at most `maxBytes` decoded bytes, then stops reading (the connection is dropped). */
async function readCapped(body: Readable, encoding: string | undefined, maxBytes: number): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  const decoded = decoder(body, encoding);
  const chunks: Buffer[] = [];
  let total = 0;
  let truncated = false;
  try {
    for await (const chunk of decoded as AsyncIterable<Buffer>) {
      const room = maxBytes - total;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        total += room;
        truncated = true;
        break;
      }
      chunks.push(chunk);
      total += chunk.length;
    }
  } finally {
    if (decoded !== body) decoded.destroy();
    body.destroy();
  }
  return { bytes: new Uint8Array(Buffer.concat(chunks, total)), truncated };
}

function decoder(body: Readable, encoding: string | undefined): Readable {
  const name = encoding?.trim().toLowerCase();
  if (!name || name === "identity") return body;
  const stream = name === "gzip" || name === "x-gzip" ? createGunzip() : name === "deflate" ? createInflate() : name === "br" ? createBrotliDecompress() : undefined;
  if (!stream) throw new FetchRefusedError(`unsupported content encoding: ${name}`);
  body.on("error", (error) => stream.destroy(error));
  return body.pipe(stream);
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** undici wraps a connector's error; the refusal inside is what the model should read. */
function unwrap(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof FetchRefusedError) return current;
    current = (current as Error & { cause?: unknown }).cause;
  }
  return error;
}
