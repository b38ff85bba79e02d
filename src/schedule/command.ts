/**
 * `/reminders` for people: list, cancel, pause, resume and edit without asking the agent.
 *
 *   /reminders                        the conversation's items, soonest first
 *   /reminders cancel r3              (also: delete, remove)
 *   /reminders pause r3 · resume r3
 *   /reminders edit r3 text Call the bank at 10
 *   /reminders edit r3 at tomorrow 09:00 · in 2h · every 30m · cron 0 9 * * 1
 *
 * Creating one is a request in words to the agent, which calls the `schedule` tool.
 */
import type { Requester } from "./item.js";
import type { EditInput, ScheduleService } from "./service.js";

const USAGE = "Usage: /reminders · /reminders cancel <id> · /reminders pause <id> · /reminders resume <id> · /reminders edit <id> text <new text> | at <time> | in <duration> | every <interval> | cron <expression>";

export async function remindersCommand(service: ScheduleService, requester: Requester, args: string): Promise<string> {
  const [action = "list", id, ...rest] = args.trim().split(/\s+/).filter((word) => word !== "");
  const verb = action.toLowerCase();
  if (verb === "list") return service.listText(requester);
  if (!id) return USAGE;
  switch (verb) {
    case "cancel":
    case "delete":
    case "remove":
      return (await service.cancel(requester, id)).text;
    case "pause":
      return (await service.pause(requester, id)).text;
    case "resume":
      return (await service.resume(requester, id)).text;
    case "edit": {
      const changes = editOf(rest);
      return changes ? (await service.edit(requester, id, changes)).text : USAGE;
    }
    default:
      return USAGE;
  }
}

function editOf(words: readonly string[]): EditInput | undefined {
  const [field, ...rest] = words;
  const value = rest.join(" ").replace(/^["'“]|["'”]$/g, "").trim();
  if (!field || value === "") return undefined;
  switch (field.toLowerCase()) {
    case "text":
      return { text: value };
    case "at":
      return { when: { at: value } };
    case "in":
      return { when: { in: value } };
    case "every":
      return { when: { every: value } };
    case "cron":
      return { when: { cron: value } };
    default:
      return undefined;
  }
}
