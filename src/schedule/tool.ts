/**
 * The `schedule` tool: the agent sets, lists and changes the chat's reminders and tasks on the
 * user's behalf, with the same rules as `/reminders` (caps, minimum interval, who may cancel).
 * Its answers are sentences the model can pass on; refusals are answers, not errors.
 */
import type { MessageOrigin } from "../core/channel.js";
import { toolCallKey } from "../core/call-key.js";
import type { ToolDefinition } from "../core/messages.js";
import { requesterOf, type ItemKind } from "./item.js";
import type { ScheduleService } from "./service.js";
import type { WhenInput } from "./when.js";

/** What the tool reads from the turn (a subset of the agent's ToolContext). */
export interface ScheduleToolContext {
  origin?: MessageOrigin;
  timeZone?: string;
  sessionKey?: string;
  /** The version the turn will commit: with the arguments, the key that makes a re-run's create find the first. */
  turnVersion?: number;
}

export interface ScheduleTool {
  definition: ToolDefinition;
  run(args: Record<string, unknown>, context: ScheduleToolContext): Promise<string>;
  /** The calls that wait for the asker's approval by button (`asksApproval`). */
  needsApproval(args: Record<string, unknown>): boolean;
}

/**
 * A recurring agent task runs the model with its instructions again and again, long after the
 * conversation that made it, so text planted in a document or a tool result must not create one
 * unseen (issue 29 item 8): creating one waits for the asker's approval by button, and so does an
 * edit that could make or change one (new instructions, kind=task, a new recurrence) unless it
 * makes the item a plain reminder. One-off tasks and reminders are created at once. Resuming a
 * paused item asks too: the call names only an id, so the tool cannot tell a reminder from a
 * recurring task the user stopped on purpose, and planted text must not restart one. Pausing and
 * cancelling (which only stop things) run at once.
 */
export function asksApproval(args: Record<string, unknown>): boolean {
  const recurring = stringArg(args, "every") !== undefined || stringArg(args, "cron") !== undefined;
  // A check-in is a recurring agent run too.
  if (args.action === "create") return (args.kind === "task" && recurring) || args.kind === "checkin";
  if (args.action === "edit") return args.kind !== "reminder" && (recurring || args.kind === "task" || args.kind === "checkin" || stringArg(args, "text") !== undefined);
  return args.action === "resume";
}

// Static text only: tool definitions sit in the cached prompt prefix.
const DEFINITION: ToolDefinition = {
  type: "function",
  function: {
    name: "schedule",
    description: [
      "Reminders and scheduled tasks of this chat.",
      "action=create with kind=reminder posts `text` as it is at the time (no further thinking); kind=task gives you `text` as instructions at the time, and your answer is posted (e.g. \"summarise this week's plan\").",
      "Times are read in the chat's time zone; for a date relative to today (tomorrow, Friday) pass it as in `at` (\"tomorrow 09:00\") or call current_time first.",
      "Give one of at / in / cron, or every (with at or in for the first run, if not one interval from now).",
      "Tell the user the absolute date and time this tool confirms, and the id.",
      "action=list shows the items with ids; edit (new text and/or time), pause, resume and cancel take the id.",
      "Creating a recurring task, changing a task's instructions or recurrence, or resuming a paused item waits for the user's approval by button.",
    ].join(" "),
    parameters: {
      type: "object",
      properties: {
        action: { type: "string", enum: ["create", "list", "edit", "pause", "resume", "cancel"] },
        id: { type: "string", description: "Item id for edit, pause, resume, cancel, e.g. r3" },
        kind: { type: "string", enum: ["reminder", "task", "checkin"], description: "reminder (default): a fixed message; task: instructions for you; checkin (with every): you look at the chat each time and write only if something is worth it (text: what to keep an eye on)" },
        text: { type: "string", description: "The reminder's message, or the task's instructions" },
        at: { type: "string", description: "Local time in the chat's zone: \"2026-03-30T09:00\", \"09:00\", \"tomorrow 09:00\", \"friday 9am\"; or absolute with Z or an offset" },
        in: { type: "string", description: "From now: \"2h30m\", \"90s\", \"3 days\", \"PT2H\"" },
        every: { type: "string", description: "Fixed interval of a recurring item: \"30m\", \"2h\", \"1d\"" },
        cron: { type: "string", description: "5-field cron for calendar recurrences, in the chat's zone: \"0 9 * * 1\" is Mondays at 09:00" },
      },
      required: ["action"],
      additionalProperties: false,
    },
  },
};

export function createScheduleTool(service: ScheduleService): ScheduleTool {
  return {
    definition: DEFINITION,
    needsApproval: asksApproval,
    async run(args, context) {
      if (!context.origin) throw new Error("there is no chat to schedule in");
      const requester = requesterOf(context.origin, context.timeZone ?? "UTC");
      const id = stringArg(args, "id") ?? "";
      const kind = kindArg(args);
      const when = whenArgs(args);
      switch (args.action) {
        case "create":
          return (await service.create(requester, { kind: kind ?? "reminder", text: stringArg(args, "text") ?? "", when: when ?? {} }, toolCallKey(context, args))).text;
        case "list":
          return service.listText(requester);
        case "edit": {
          const text = stringArg(args, "text");
          if (text === undefined && kind === undefined && when === undefined) throw new Error("edit needs a new text, kind or time");
          return service.once(toolCallKey(context, args), () => service.edit(requester, id, { text, kind, when }));
        }
        case "pause":
          return service.once(toolCallKey(context, args), () => service.pause(requester, id));
        case "resume":
          return service.once(toolCallKey(context, args), () => service.resume(requester, id));
        case "cancel":
          return service.once(toolCallKey(context, args), () => service.cancel(requester, id));
        default:
          throw new Error(`unknown action ${JSON.stringify(args.action)}: use create, list, edit, pause, resume or cancel`);
      }
    },
  };
}

function stringArg(args: Record<string, unknown>, name: string): string | undefined {
  const value = args[name];
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

function kindArg(args: Record<string, unknown>): ItemKind | undefined {
  if (args.kind === undefined) return undefined;
  if (args.kind === "reminder" || args.kind === "task" || args.kind === "checkin") return args.kind;
  throw new Error(`kind must be "reminder", "task" or "checkin", not ${JSON.stringify(args.kind)}`);
}

function whenArgs(args: Record<string, unknown>): WhenInput | undefined {
  const when: WhenInput = { at: stringArg(args, "at"), in: stringArg(args, "in"), every: stringArg(args, "every"), cron: stringArg(args, "cron") };
  return Object.values(when).some((value) => value !== undefined) ? when : undefined;
}
