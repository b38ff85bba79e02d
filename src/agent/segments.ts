/**
 * How a batch of inbox entries splits into segments: commands, button presses and fired
 * reminders one by one, consecutive chat messages together as one agent turn.
 */
import type { InboxEntry } from "../session/store.js";
import { parseCommand } from "./commands/parse.js";
import { joinPasteParts } from "./paste-parts.js";
import type { Segment } from "./turn-types.js";


/**
 * Commands and button presses are handled one by one, in order; consecutive chat messages form
 * one agent turn. A fired reminder is its own segment (no LLM call); a fired task is an agent
 * turn of its own, so its answer is not mixed with the answer to what people wrote.
 */
export function segmentBatch(batch: readonly InboxEntry[]): Segment[] {
  const segments: Segment[] = [];
  // The parts of one long paste are one message (paste-parts.ts).
  for (const entry of joinPasteParts(batch)) {
    if (entry.action) {
      segments.push({ kind: "action", entry });
      continue;
    }
    if (entry.scheduled?.kind === "checkin") {
      // Missed check-ins waiting together merge into one: it looks at the chat as it is now.
      const previous = segments.findIndex((segment) => segment.kind === "checkin");
      if (previous >= 0) segments.splice(previous, 1);
      segments.push({ kind: "checkin", entry });
      continue;
    }
    if (entry.scheduled?.kind === "reminder") {
      segments.push({ kind: "reminder", entry });
      continue;
    }
    const command = entry.scheduled ? undefined : parseCommand(entry.text);
    if (command) {
      segments.push({ kind: "command", command, entry });
      continue;
    }
    const last = segments[segments.length - 1];
    const joinable = last?.kind === "chat" && !entry.scheduled && !last.entries.some((previous) => previous.scheduled);
    if (joinable) last.entries.push(entry);
    else segments.push({ kind: "chat", entries: [entry] });
  }
  return segments;
}

/** The entries of `segments`, in order. */
export const entriesOf = (segments: readonly Segment[]): InboxEntry[] => segments.flatMap((segment) => (segment.kind === "chat" ? segment.entries : [segment.entry]));

/** The last entry a segment answers: its speaker pays for the segment's calls. */
export const lastEntryOf = (segment: Segment): InboxEntry | undefined => (segment.kind === "chat" ? segment.entries[segment.entries.length - 1] : segment.entry);
