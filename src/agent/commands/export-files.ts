/**
 * `/export` (issue #16 item 6, docs/memory.md): the user's data as files for the chat. The data
 * is what `npm run admin -- export-user` prints (src/memory exportUserData); here it becomes a
 * readable Markdown file and the complete JSON.
 *
 * Size: a file over the part cap is gzipped (text shrinks 5–10×); one still over it is cut at
 * line boundaries into parts, each gzipped on its own, so every part opens by itself and the
 * parts joined give the whole file. The cap is the platform's upload limit, and at most
 * EXPORT_PART_MAX_BYTES: every part waits in the session's outbox (Redis, base64) until sent.
 */
import { gzipSync } from "node:zlib";
import type { ReplyDocument } from "../../core/channel.js";
import type { ChatMessage } from "../../core/messages.js";
import type { UserExport } from "../../memory/index.js";

/** Largest file part an export puts in the outbox. */
export const EXPORT_PART_MAX_BYTES = 8 * 1024 * 1024;

const MARKDOWN = "text/markdown";
const JSON_MIME = "application/json";
const GZIP = "application/gzip";

export interface ExportFiles {
  documents: ReplyDocument[];
  /** Messages in the files (every conversation and archive), and memory facts. */
  messages: number;
  conversations: number;
  facts: number;
}

export function exportFiles(data: UserExport, maxBytes: number): ExportFiles {
  const cap = Math.max(1_024, Math.min(maxBytes, EXPORT_PART_MAX_BYTES));
  const stamp = data.exportedAt.slice(0, 10);
  const base = `longhaul-export-${safeName(data.user)}-${stamp}`;
  const documents = [
    ...fileParts(`${base}.md`, MARKDOWN, exportMarkdown(data), cap),
    ...fileParts(`${base}.json`, JSON_MIME, `${JSON.stringify(data, null, 2)}\n`, cap),
  ];
  const conversations = data.sessions.flatMap((session) => [session.transcript, ...session.archives.map((archive) => archive.transcript)]);
  return {
    documents,
    messages: conversations.reduce((sum, transcript) => sum + transcript.length, 0),
    conversations: conversations.length,
    facts: data.memory.facts.length,
  };
}

/** One file, gzipped or cut into gzipped parts when it is over `cap` bytes. */
export function fileParts(filename: string, mime: string, text: string, cap: number): ReplyDocument[] {
  const raw = Buffer.from(text, "utf8");
  if (raw.length <= cap) return [{ filename, mime, base64: raw.toString("base64") }];
  const whole = gzipSync(raw);
  if (whole.length <= cap) return [{ filename: `${filename}.gz`, mime: GZIP, base64: whole.toString("base64") }];
  // Cut at line boundaries into pieces whose gzip fits; more pieces until every one does.
  for (let count = Math.ceil(whole.length / (cap * 0.9)); ; count++) {
    const pieces = cutLines(text, Math.ceil(raw.length / count));
    const zipped = pieces.map((piece) => gzipSync(Buffer.from(piece, "utf8")));
    if (zipped.every((part) => part.length <= cap)) {
      return zipped.map((part, index) => ({
        filename: `${filename.replace(/(\.[a-z]+)$/, `-part${index + 1}-of-${zipped.length}$1`)}.gz`,
        mime: GZIP,
        base64: part.toString("base64"),
      }));
    }
  }
}

/** `text` in pieces of at most `size` bytes, cut after a newline (a longer line is cut between characters). */
function cutLines(text: string, size: number): string[] {
  const pieces: string[] = [];
  let current = "";
  let bytes = 0;
  const add = (piece: string, pieceBytes: number) => {
    if (bytes > 0 && bytes + pieceBytes > size) {
      pieces.push(current);
      current = "";
      bytes = 0;
    }
    current += piece;
    bytes += pieceBytes;
  };
  for (const line of text.split(/(?<=\n)/)) {
    const lineBytes = Buffer.byteLength(line);
    if (lineBytes <= size) add(line, lineBytes);
    else for (const character of line) add(character, Buffer.byteLength(character));
  }
  if (current !== "") pieces.push(current);
  return pieces;
}

const safeName = (text: string) => text.replace(/[^A-Za-z0-9._-]+/g, "-");

const when = (at: number | undefined) => (at === undefined ? "" : ` · ${new Date(at).toISOString().replace("T", " ").slice(0, 16)} UTC`);

/** The export as a person reads it: memory first, then every conversation, oldest message first. */
export function exportMarkdown(data: UserExport): string {
  // Appended one by one: a long transcript has far more lines than a spread may pass.
  const lines = [`# longhaul export for ${data.user}`, "", `Exported ${data.exportedAt}. The JSON file holds the same data, complete.`, ""];
  lines.push(`## Memory (${data.memory.facts.length} ${data.memory.facts.length === 1 ? "fact" : "facts"})`, "");
  if (data.memory.facts.length === 0) lines.push("Nothing is remembered about you.");
  for (const fact of data.memory.facts) lines.push(`- [${fact.id}] ${fact.text}${when(fact.at)}`);
  if ((data.memory.sharedWith ?? []).length > 0) lines.push("", `Shared with: ${data.memory.sharedWith!.join(", ")}`);
  for (const session of data.sessions) {
    lines.push("", `## Conversation ${session.sessionKey}`, "");
    conversation(lines, session.transcript);
    for (const archive of session.archives) {
      lines.push("", `### Archived conversation ${archive.sessionId}`, "");
      conversation(lines, archive.transcript);
    }
  }
  return `${lines.join("\n")}\n`;
}

function conversation(lines: string[], transcript: readonly ChatMessage[]): void {
  if (transcript.length === 0) lines.push("(no messages)");
  for (const message of transcript) lines.push(`**${speaker(message)}**${when(message.at)}`, "", body(message), "");
}

function speaker(message: ChatMessage): string {
  if (message.kind === "summary") return "summary (of older messages)";
  if (message.role === "tool") return `tool result (${message.tool_call_id})`;
  return message.role;
}

function body(message: ChatMessage): string {
  const calls = message.role === "assistant" ? (message.tool_calls ?? []).map((call) => `→ tool call ${call.function.name} ${call.function.arguments}`) : [];
  const text = message.content ?? "";
  return [text, ...calls].filter((part) => part !== "").join("\n") || "(empty)";
}
