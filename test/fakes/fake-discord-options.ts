/**
 * The options of the fake Discord's application commands, as strict as Discord's: what it
 * refuses in a registration, and what its client lets a user send when running a command.
 */
import type { Payload } from "./fake-discord-world.js";

/** A command's or an option's name. */
export const NAME = /^[-_\p{Ll}\p{Lo}\p{N}]{1,32}$/u;
/** Discord's 400 for a field it refuses. */
export const invalidForm = (field: string, message: string) => ({ message: "Invalid Form Body", code: 50035, errors: { [field]: { _errors: [{ code: "BASE_TYPE_INVALID", message }] } } });

/** Option types: subcommand, subcommand group, string. */
const SUBCOMMAND = 1;
const SUBCOMMAND_GROUP = 2;
const STRING = 3;

/**
 * Discord's checks of a command's options: at most 25, names and descriptions as for commands,
 * subcommands only at the top and not mixed with values, required values before optional ones,
 * at most 25 choices of 1–100 characters each.
 */
export function invalidOptions(value: unknown, top: boolean): Payload | undefined {
  const options = value as Payload[];
  if (!Array.isArray(options) || options.length > 25) return invalidForm("options", "Must be 25 or fewer in length.");
  const subcommands = options.filter((option) => option.type === SUBCOMMAND || option.type === SUBCOMMAND_GROUP).length;
  if (subcommands > 0 && (!top || subcommands !== options.length)) return invalidForm("options", "Sub-commands cannot be mixed with other option types, nor nested here");
  let optionalSeen = false;
  for (const option of options) {
    if (typeof option.name !== "string" || !NAME.test(option.name)) return invalidForm("options.name", "Option name is invalid");
    if (typeof option.description !== "string" || [...option.description].length < 1 || [...option.description].length > 100) return invalidForm("options.description", "Must be between 1 and 100 in length.");
    if (option.type === SUBCOMMAND) {
      const nested = invalidOptions(option.options ?? [], false);
      if (nested) return nested;
      continue;
    }
    if (option.required === true && optionalSeen) return invalidForm("options.required", "Required options must be placed before non-required options");
    if (option.required !== true) optionalSeen = true;
    const choices = (option.choices ?? []) as Payload[];
    if (!Array.isArray(choices) || choices.length > 25) return invalidForm("options.choices", "Must be 25 or fewer in length.");
    for (const choice of choices) {
      if (typeof choice.name !== "string" || [...choice.name].length < 1 || [...choice.name].length > 100) return invalidForm("options.choices.name", "Must be between 1 and 100 in length.");
      if (option.type === STRING && (typeof choice.value !== "string" || [...choice.value].length > 100)) return invalidForm("options.choices.value", "Must be a string of 100 or fewer in length.");
    }
  }
  return undefined;
}

/** What a user fills in when running a slash command: its subcommand, and values by option name. */
export interface SlashInput {
  subcommand?: string;
  values?: Record<string, string>;
}

/**
 * The `data.options` Discord dispatches for `input`, as its client lets a user send them: only a
 * registered subcommand (one is required when the command has them), only its options, every
 * required one filled, a value among the choices where there are choices.
 */
export function slashOptions(command: Payload, input: SlashInput): Payload[] {
  const declared = (command.options ?? []) as Payload[];
  const hasSubcommands = declared.some((option) => option.type === SUBCOMMAND);
  const subcommand = hasSubcommands ? declared.find((option) => option.name === input.subcommand) : undefined;
  if (hasSubcommands !== (input.subcommand !== undefined) || (hasSubcommands && !subcommand)) throw new Error(`fake discord: /${String(command.name)} has no subcommand ${String(input.subcommand)}`);
  const options = ((subcommand ? subcommand.options : declared) ?? []) as Payload[];
  const values = input.values ?? {};
  for (const name of Object.keys(values)) if (!options.some((option) => option.name === name)) throw new Error(`fake discord: /${String(command.name)} has no option ${name}`);
  const filled = options.flatMap((option) => {
    const value = values[String(option.name)];
    if (value === undefined) {
      if (option.required === true) throw new Error(`fake discord: /${String(command.name)} needs ${String(option.name)}`);
      return [];
    }
    const choices = (option.choices ?? []) as Payload[];
    if (choices.length > 0 && !choices.some((choice) => choice.value === value)) throw new Error(`fake discord: ${value} is no choice of ${String(option.name)}`);
    return [{ name: option.name, type: option.type, value }];
  });
  return subcommand ? [{ name: subcommand.name, type: SUBCOMMAND, options: filled }] : filled;
}
