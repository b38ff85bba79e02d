/**
 * The eval's dialogue file (eval/dialogue/*.yaml): days of dated messages and the probes asked
 * after the last one. Read and checked here; what the fields mean is written at the top of
 * eval/dialogue/heron-launch.yaml.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { z } from "zod";

const SHIPPED_DIALOGUE = "eval/dialogue/heron-launch.yaml";

/**
 * The shipped dialogue: found from this module's folder upwards (the source tree, or a build
 * of it under .tmp/ or dist/), else under the working directory.
 */
export const DEFAULT_DIALOGUE = ((): string => {
  let folder = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(folder, SHIPPED_DIALOGUE);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(folder);
    if (parent === folder) return resolve(SHIPPED_DIALOGUE);
    folder = parent;
  }
})();

export const PROBE_CATEGORIES = ["identifiers", "facts", "corrections", "decisions", "preferences", "pending", "people"] as const;
export type ProbeCategory = (typeof PROBE_CATEGORIES)[number];

/** One required item: any of its alternatives in the answer counts. */
export type Alternatives = readonly string[];

export interface Probe {
  id: string;
  category: ProbeCategory;
  question: string;
  /** Every item must appear (one of its alternatives each). */
  items: readonly Alternatives[];
  /** None of these may appear (the old value of a corrected fact). */
  reject: readonly string[];
  /** Where the answer lives in the conversation (read by the tests' fake model only). */
  cue: readonly string[];
}

export interface DialogueMessage {
  /** Unix ms. */
  at: number;
  /** A person's name, or the assistant. */
  speaker: string;
  fromAssistant: boolean;
  text: string;
}

export interface DialogueDay {
  /** `YYYY-MM-DD`. */
  date: string;
  messages: DialogueMessage[];
}

export interface Dialogue {
  name: string;
  timeZone: string;
  chatType: "private" | "group";
  days: DialogueDay[];
  /** When the probes are asked (after the last message). */
  probeAt: number;
  probes: Probe[];
}

export class DialogueError extends Error {
  override readonly name = "DialogueError";
}

const alternatives = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);

const fileSchema = z.strictObject({
  name: z.string().min(1),
  timeZone: z.literal("UTC"),
  chatType: z.enum(["private", "group"]),
  assistant: z.string().min(1),
  probeAt: z.string().regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/),
  days: z.array(z.strictObject({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/), messages: z.string().min(1) })).min(1),
  probes: z.array(z.strictObject({
    id: z.string().regex(/^[a-z0-9-]+$/),
    category: z.enum(PROBE_CATEGORIES),
    question: z.string().min(1),
    expect: alternatives.optional(),
    items: z.array(alternatives).min(1).optional(),
    reject: z.array(z.string().min(1)).default([]),
    cue: z.array(z.string().min(1)).min(1),
  }).refine((probe) => (probe.expect === undefined) !== (probe.items === undefined), "exactly one of expect and items")).min(1),
});

const LINE = /^(\d{2}):(\d{2}) ([^:]+): (.+)$/;

export function loadDialogue(path: string = DEFAULT_DIALOGUE): Dialogue {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, "utf8"));
  } catch (error) {
    throw new DialogueError(`cannot read the dialogue ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return parseDialogue(raw, path);
}

export function parseDialogue(raw: unknown, source = "dialogue"): Dialogue {
  const result = fileSchema.safeParse(raw);
  if (!result.success) {
    throw new DialogueError(`${source}:\n${result.error.issues.map((issue) => `  ${issue.path.join(".")}: ${issue.message}`).join("\n")}`);
  }
  const file = result.data;
  const toList = (value: string | string[]): string[] => (typeof value === "string" ? [value] : value);
  let previous = Number.NEGATIVE_INFINITY;
  const days = file.days.map((day): DialogueDay => ({
    date: day.date,
    messages: day.messages.split("\n").map((line) => line.trim()).filter((line) => line !== "").map((line) => {
      const match = LINE.exec(line);
      if (!match) throw new DialogueError(`${source}: ${day.date}: not "HH:MM Speaker: text": ${line}`);
      const at = Date.parse(`${day.date}T${match[1]}:${match[2]}:00Z`);
      if (!(at >= previous)) throw new DialogueError(`${source}: ${day.date} ${match[1]}:${match[2]}: messages must be in time order`);
      previous = at;
      const speaker = match[3]!.trim();
      return { at, speaker, fromAssistant: speaker === file.assistant, text: match[4]! };
    }),
  }));
  const probeAt = Date.parse(`${file.probeAt.replace(" ", "T")}:00Z`);
  if (!(probeAt > previous)) throw new DialogueError(`${source}: probeAt must come after the last message`);
  const ids = new Set<string>();
  const probes = file.probes.map((probe): Probe => {
    if (ids.has(probe.id)) throw new DialogueError(`${source}: probe id ${probe.id} is used twice`);
    ids.add(probe.id);
    return {
      id: probe.id,
      category: probe.category,
      question: probe.question,
      items: probe.items ? probe.items.map(toList) : [toList(probe.expect!)],
      reject: probe.reject,
      cue: probe.cue,
    };
  });
  return { name: file.name, timeZone: file.timeZone, chatType: file.chatType, days, probeAt, probes };
}
