/**
 * The `/export` files: readable Markdown and complete JSON; a file over the cap gzipped, one
 * still over it cut into gzipped parts that each open alone and join into the whole file.
 */
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { EXPORT_PART_MAX_BYTES, exportFiles, exportMarkdown, fileParts } from "../../../src/agent/commands/export-files.js";
import type { ChatMessage } from "../../../src/core/messages.js";
import type { UserExport } from "../../../src/memory/index.js";

const bytesOf = (base64: string) => Buffer.from(base64, "base64");

/** A pseudo-random text that gzip cannot shrink much (so the parts must be cut). */
function noisyText(lines: number, seed = 7): string {
  let state = seed;
  const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31);
  return Array.from({ length: lines }, (_, line) => `${line}: ${Array.from({ length: 60 }, () => String.fromCharCode(0x21 + (next() % 90))).join("")} ünï ✓`).join("\n") + "\n";
}

function exportOf(messages: number, transcriptText: (index: number) => string): UserExport {
  const transcript: ChatMessage[] = Array.from({ length: messages }, (_, index) => (
    index % 2 === 0 ? { id: `m${index}`, at: Date.UTC(2026, 11, 1, 10, 0, index), role: "user", content: transcriptText(index) }
      : { id: `m${index}`, at: Date.UTC(2026, 11, 1, 10, 0, index), role: "assistant", content: transcriptText(index) }));
  return {
    user: "telegram:42",
    exportedAt: "2026-12-01T12:00:00.000Z",
    memory: { facts: [{ id: "u1", text: "likes tea", at: Date.UTC(2026, 10, 30) }], nextId: 2 },
    sessions: [{ sessionKey: "tg:42", transcript, archives: [{ sessionId: "s-old", transcript: transcript.slice(0, 2) }] }],
  };
}

describe("export files", () => {
  it("a small export: one .md and one .json, uncompressed, with every message and the memory", () => {
    const data = exportOf(6, (index) => `message number ${index}`);
    const files = exportFiles(data, 50 * 1024 * 1024);
    expect(files.documents.map((document) => [document.filename, document.mime])).toEqual([
      ["longhaul-export-telegram-42-2026-12-01.md", "text/markdown"],
      ["longhaul-export-telegram-42-2026-12-01.json", "application/json"],
    ]);
    expect(files).toMatchObject({ messages: 8, conversations: 2, facts: 1 });
    const md = bytesOf(files.documents[0]!.base64).toString("utf8");
    for (let index = 0; index < 6; index++) expect(md).toContain(`message number ${index}`);
    expect(md).toContain("- [u1] likes tea · 2026-11-30 00:00 UTC");
    expect(md).toContain("### Archived conversation s-old");
    expect(JSON.parse(bytesOf(files.documents[1]!.base64).toString("utf8"))).toEqual(data);
  });

  it("a file over the cap is gzipped whole when that fits", () => {
    const text = "the same line again and again\n".repeat(2_000);
    const [part, ...rest] = fileParts("a.md", "text/markdown", text, 4_096);
    expect(rest).toHaveLength(0);
    expect(part!.filename).toBe("a.md.gz");
    expect(part!.mime).toBe("application/gzip");
    expect(bytesOf(part!.base64).length).toBeLessThanOrEqual(4_096);
    expect(gunzipSync(bytesOf(part!.base64)).toString("utf8")).toBe(text);
  });

  it("a file whose gzip is still over the cap is cut at lines into gzipped parts, each under the cap, joining into the whole", () => {
    const text = noisyText(2_000);
    const cap = 16 * 1024;
    const parts = fileParts("b.md", "text/markdown", text, cap);
    expect(parts.length).toBeGreaterThan(2);
    parts.forEach((part, index) => {
      expect(part.filename).toBe(`b-part${index + 1}-of-${parts.length}.md.gz`);
      expect(bytesOf(part.base64).length).toBeLessThanOrEqual(cap);
    });
    const pieces = parts.map((part) => gunzipSync(bytesOf(part.base64)).toString("utf8"));
    expect(pieces.join("")).toBe(text);
    // Cut after a newline: each part but the last ends a line.
    for (const piece of pieces.slice(0, -1)) expect(piece.endsWith("\n")).toBe(true);
  });

  it("one line longer than the cap is cut between characters, never inside one", () => {
    const text = noisyText(400).replaceAll("\n", " ");
    const parts = fileParts("c.json", "application/json", text, 4_096);
    const joined = parts.map((part) => gunzipSync(bytesOf(part.base64)).toString("utf8")).join("");
    expect(joined).toBe(text);
    for (const part of parts) expect(bytesOf(part.base64).length).toBeLessThanOrEqual(4_096);
  });

  it("a very long transcript (past the outbox cap) is still sent whole, in parts no larger than EXPORT_PART_MAX_BYTES", () => {
    const data = exportOf(40_000, (index) => noisyText(6, index + 1));
    const files = exportFiles(data, 50 * 1024 * 1024);
    const md = files.documents.filter((document) => document.filename.includes(".md"));
    expect(md.length).toBeGreaterThan(1);
    for (const document of files.documents) expect(bytesOf(document.base64).length).toBeLessThanOrEqual(EXPORT_PART_MAX_BYTES);
    expect(md.map((document) => gunzipSync(bytesOf(document.base64)).toString("utf8")).join("")).toBe(exportMarkdown(data));
  }, 120_000);
});
