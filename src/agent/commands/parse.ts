import { COMMAND_NAMES, type CommandName } from "../../core/commands.js";

export { COMMAND_NAMES, type CommandName };

export interface ParsedCommand {
  name: CommandName;
  /** Text after the command, trimmed (the focus of /compress). */
  args: string;
}

/**
 * `/name[@bot] [args]` at the very start of a message. Unknown slash words are ordinary text
 * (people write "/etc/hosts" or "/shrug"), so only the product's commands are recognised.
 */
export function parseCommand(text: string): ParsedCommand | undefined {
  const match = /^\/([a-z]+)(?:@[A-Za-z0-9_]+)?(?:\s+([\s\S]*))?$/i.exec(text.trim());
  if (!match?.[1]) return undefined;
  const name = match[1].toLowerCase();
  if (!(COMMAND_NAMES as readonly string[]).includes(name)) return undefined;
  return { name: name as CommandName, args: (match[2] ?? "").trim() };
}
