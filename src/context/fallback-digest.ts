/**
 * When every summarizer failed and turns had to be dropped (`dropped`), the context used to keep
 * no trace of them (issue #31). The fallback digest is written without a model: who spoke, when,
 * the message ids and the first line of each dropped user message, marked as a fallback, so the
 * model knows what was there and can `recall` it. Deterministic: the same turns give the same text.
 */
import type { ChatMessage } from "../core/messages.js";
import { formatStamp } from "../core/time-stamp.js";
import { sliceSafely } from "./prune.js";
import type { TokenCounter } from "./tokens.js";

export const FALLBACK_DIGEST_HEADER =
  "## Fallback digest (no summary: the summarizer failed)\nThese earlier turns were set aside without a summary. Each line names a message: recall(\"id\") reads it whole.";

/** Characters of a user message's first line shown in the digest. */
const FIRST_LINE_MAX_CHARS = 160;

/** `Alice: …` in group chats; the time stamp `[Tue …]` the agent writes is left to the label. */
function firstLine(content: string): string {
  const text = content.replace(/^\[[^\]]*\]\s*/, "").trim();
  const line = text.split("\n", 1)[0] ?? "";
  return line.length > FIRST_LINE_MAX_CHARS ? `${sliceSafely(line, 0, FIRST_LINE_MAX_CHARS)}…` : line;
}

/** One line per dropped turn: the user's message, then what answered it (ids and tools). */
function digestLines(dropped: readonly ChatMessage[], toolNames: ReadonlyMap<string, string>, timeZone: string): string[] {
  const lines: string[] = [];
  let answers: string[] = [];
  const flush = () => {
    if (answers.length > 0 && lines.length > 0) lines[lines.length - 1] += ` → ${answers.join(", ")}`;
    else if (answers.length > 0) lines.push(`- ${answers.join(", ")}`);
    answers = [];
  };
  for (const message of dropped) {
    if (message.role === "user") {
      flush();
      const date = message.at === undefined ? "" : ` ${formatStamp(message.at, timeZone)} ·`;
      lines.push(`- [${message.id}]${date} user: ${firstLine(message.content)}`);
    } else if (message.role === "assistant") {
      const calls = (message.tool_calls ?? []).map((call) => call.function.name);
      answers.push(calls.length > 0 ? `[${message.id}] assistant calls ${calls.join(", ")}` : `[${message.id}] assistant`);
    } else if (message.role === "tool") {
      answers.push(`[${message.id}] ${toolNames.get(message.tool_call_id) ?? "tool"} result`);
    }
  }
  flush();
  return lines;
}

const GAP_LINE = /^- \((\d+) older turns, \[([^\]]*)\] onwards: recall by id or search\)$/;

/**
 * A summary text split into what a summarizer wrote and the fallback digest a `dropped`
 * compaction appended to it (always last), as lines.
 */
export function splitFallbackDigest(text: string): { summary: string; digestLines: string[] } {
  const at = text.indexOf(FALLBACK_DIGEST_HEADER);
  if (at < 0) return { summary: text, digestLines: [] };
  const lines = text.slice(at + FALLBACK_DIGEST_HEADER.length).split("\n").filter((line) => line.startsWith("- "));
  return { summary: text.slice(0, at).trim(), digestLines: lines };
}

/**
 * The digest of `dropped`, at most `maxTokens`: when every line does not fit, the newest lines
 * are kept and the oldest named as a range of ids. `earlier` are the lines of the digest a
 * previous drop left (`splitFallbackDigest`): they come first, in one digest, so that drops
 * while the summarizer stays down do not pile a digest each onto a summary nothing may drop.
 */
export function fallbackDigest(
  dropped: readonly ChatMessage[],
  options: { toolNames: ReadonlyMap<string, string>; timeZone?: string; maxTokens: number; counter: TokenCounter; earlier?: readonly string[] },
): string {
  // An earlier digest's own range line opens its lines: its turns and first id carry over.
  const earlier = [...(options.earlier ?? [])];
  const earlierGap = GAP_LINE.exec(earlier[0] ?? "");
  if (earlierGap) earlier.shift();
  const olderTurns = earlierGap ? Number(earlierGap[1]) : 0;
  const firstId = earlierGap?.[2] ?? /^- \[([^\]]*)\]/.exec(earlier[0] ?? "")?.[1] ?? dropped[0]?.id;
  const lines = [...earlier, ...digestLines(dropped, options.toolNames, options.timeZone ?? "UTC")];
  const render = (kept: readonly string[], omitted: number) => {
    const gap = omitted > 0 ? [`- (${omitted} older turns, [${firstId}] onwards: recall by id or search)`] : [];
    return [FALLBACK_DIGEST_HEADER, ...gap, ...kept].join("\n");
  };
  let start = 0;
  let text = render(lines, olderTurns);
  while (start < lines.length && options.counter.countText(text) > options.maxTokens) {
    start += Math.max(1, Math.floor((lines.length - start) / 8));
    text = render(lines.slice(start), olderTurns + start);
  }
  return text;
}
