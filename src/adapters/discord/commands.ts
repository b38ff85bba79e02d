/**
 * Discord application (slash) commands from the command registry (src/core/commands.ts): the
 * same list as Telegram's menus. They are global commands, kept in sync by difference at start:
 * the registered list is fetched and only what differs is created, edited or deleted, one
 * request at a time through @discordjs/rest (which waits out each route's rate limit). Discord
 * allows 100 global commands and 200 command creations a day, so an unchanged list costs one GET.
 */
import { Routes, type REST } from "discord.js";
import { COMMAND_MENU, type CommandOption, type CommandSpec } from "../../core/commands.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";

/** Discord's cap on global application commands of one type (CHAT_INPUT). */
export const DISCORD_COMMAND_CAP = 100;
/** The one option of a command that takes text after its name. */
export const COMMAND_TEXT_OPTION = "text";

/** Interaction contexts: 0 a guild, 1 the bot's DM. Integration type 0: installed to a guild. */
const GUILD = 0;
const BOT_DM = 1;
/** MANAGE_GUILD: who sees a command meant for group admins (/persona) or the bot's (/budget) in a server. */
const MANAGE_GUILD = String(1 << 5);
/** Option types: a subcommand, a string. */
const SUBCOMMAND = 1;
const STRING = 3;

/** A string option; `required` is always sent (Discord's default is false). */
export interface StringOptionBody {
  type: typeof STRING;
  name: string;
  description: string;
  required: boolean;
  choices?: Array<{ name: string; value: string }>;
}

/** A subcommand (`/pair approve`) and its options. */
export interface SubcommandBody {
  type: typeof SUBCOMMAND;
  name: string;
  description: string;
  options: StringOptionBody[];
}

/** The fields of an application command we set and compare. */
export interface ApplicationCommandBody {
  name: string;
  description: string;
  type: 1;
  options: Array<StringOptionBody | SubcommandBody>;
  contexts: number[];
  integration_types: number[];
  default_member_permissions: string | null;
}

/** The registry as Discord application commands, in menu order. */
export function discordCommands(menu: readonly CommandSpec[] = COMMAND_MENU): ApplicationCommandBody[] {
  return menu.map((spec) => {
    const inGroups = spec.scopes.some((scope) => scope !== "private");
    const adminsOnly = inGroups && !spec.scopes.includes("group");
    return {
      name: spec.name,
      description: spec.description,
      type: 1,
      options: optionsOf(spec),
      contexts: inGroups ? [GUILD, BOT_DM] : [BOT_DM],
      integration_types: [0],
      default_member_permissions: adminsOnly ? MANAGE_GUILD : null,
    };
  });
}

function optionsOf(spec: CommandSpec): ApplicationCommandBody["options"] {
  const named: CommandOption[] = spec.options ? [...spec.options] : spec.argument ? [{ name: COMMAND_TEXT_OPTION, description: spec.argument }] : [];
  const options = named.map((option): StringOptionBody => ({
    type: STRING, name: option.name, description: option.description, required: option.required ?? false,
    ...(option.choices ? { choices: option.choices.map((choice) => ({ name: choice, value: choice })) } : {}),
  }));
  return spec.subcommand ? [{ type: SUBCOMMAND, name: spec.subcommand.name, description: spec.subcommand.description, options }] : options;
}

/** What a slash command's interaction gives (discord.js' option resolver). */
export interface SlashOptions {
  getSubcommand(required: false): string | null;
  getString(name: string, required: false): string | null;
}

/** The text a user would have typed for a slash command: `/status`, `/budget here daily $5`, `/pair approve K7Q2MX`. */
export function typedCommand(name: string, spec: CommandSpec | undefined, options: SlashOptions): string {
  const names = spec?.options?.map((option) => option.name) ?? [COMMAND_TEXT_OPTION];
  const words = [spec?.subcommand ? options.getSubcommand(false) : null, ...names.map((option) => options.getString(option, false)?.trim())]
    .filter((word): word is string => typeof word === "string" && word !== "");
  return `/${name}${words.length > 0 ? ` ${words.join(" ")}` : ""}`;
}

interface RegisteredOption {
  type?: number;
  name?: string;
  description?: string;
  required?: boolean;
  choices?: Array<{ name?: string; value?: unknown }>;
  options?: RegisteredOption[];
}

interface RegisteredCommand {
  id: string;
  name: string;
  description?: string;
  type?: number;
  options?: RegisteredOption[];
  contexts?: number[] | null;
  integration_types?: number[] | null;
  default_member_permissions?: string | null;
}

export interface CommandSyncReport {
  created: string[];
  edited: string[];
  deleted: string[];
  unchanged: number;
}

/**
 * Makes the application's global commands equal `wanted`: deletes first (freeing places under
 * the cap), then edits, then creates. Throws what Discord refused; what was done stays done.
 */
export async function syncCommands(rest: REST, applicationId: string, wanted: readonly ApplicationCommandBody[], logger: Logger): Promise<CommandSyncReport> {
  if (wanted.length > DISCORD_COMMAND_CAP) throw new Error(`${wanted.length} commands: Discord allows ${DISCORD_COMMAND_CAP} global commands`);
  const registered = (await rest.get(Routes.applicationCommands(applicationId))) as RegisteredCommand[];
  const byName = new Map(registered.filter((command) => (command.type ?? 1) === 1).map((command) => [command.name, command]));
  const report: CommandSyncReport = { created: [], edited: [], deleted: [], unchanged: 0 };
  const wantedNames = new Set(wanted.map((command) => command.name));
  for (const command of byName.values()) {
    if (wantedNames.has(command.name)) continue;
    await rest.delete(Routes.applicationCommand(applicationId, command.id));
    report.deleted.push(command.name);
  }
  for (const command of wanted) {
    const existing = byName.get(command.name);
    if (!existing) continue;
    if (sameCommand(existing, command)) {
      report.unchanged += 1;
      continue;
    }
    await rest.patch(Routes.applicationCommand(applicationId, existing.id), { body: command });
    report.edited.push(command.name);
  }
  for (const command of wanted) {
    if (byName.has(command.name)) continue;
    await rest.post(Routes.applicationCommands(applicationId), { body: command });
    report.created.push(command.name);
  }
  logger.info(report.created.length + report.edited.length + report.deleted.length === 0
    ? { unchanged: report.unchanged }
    : report, "discord slash commands in sync");
  return report;
}

/** Runs the sync, logging a failure instead of throwing: typed commands work without it. */
export function syncCommandsQuietly(rest: REST, applicationId: string | undefined, logger: Logger): Promise<void> {
  if (applicationId === undefined) {
    logger.warn("discord application id unknown: slash commands not registered");
    return Promise.resolve();
  }
  return syncCommands(rest, applicationId, discordCommands(), logger).then(
    () => undefined,
    (error: unknown) => logger.warn({ error: errorMessage(error) }, "discord slash commands not synced; commands still work when typed with a mention"),
  );
}

/** The option fields we set, in one order, Discord's omissions filled in (`required` false, no choices, no options). */
function comparable(options: readonly RegisteredOption[] | undefined): unknown[] {
  return (options ?? []).map((option) => [
    option.type, option.name, option.description, option.required ?? false,
    (option.choices ?? []).map((choice) => [choice.name, choice.value]), comparable(option.options),
  ]);
}

function sameCommand(existing: RegisteredCommand, wanted: ApplicationCommandBody): boolean {
  const sorted = (values: number[] | null | undefined) => [...(values ?? [])].sort((a, b) => a - b).join(",");
  return existing.description === wanted.description
    && JSON.stringify(comparable(existing.options)) === JSON.stringify(comparable(wanted.options))
    && sorted(existing.contexts) === sorted(wanted.contexts)
    && sorted(existing.integration_types) === sorted(wanted.integration_types)
    && (existing.default_member_permissions ?? null) === wanted.default_member_permissions;
}
