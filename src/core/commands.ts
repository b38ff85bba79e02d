/**
 * The product's chat commands (SPEC §5), below every layer: the worker interprets them, and the
 * platform adapters need the same names to tell our commands from other bots' in a group.
 */
export const COMMAND_NAMES = ["help", "new", "reset", "compress", "status", "usage", "stop", "start", "tools", "reminders", "checkin", "memory", "forget", "pin", "unpin", "context", "model", "persona", "timezone", "voice", "budget", "pair", "export"] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];

/**
 * Where a command is offered in the platforms' menus (Telegram scopes; Discord contexts).
 * `bot-admin`: for the bot's admins (ADMIN_*_USERS), whom the worker alone recognises: in no
 * Telegram menu (its scopes name chats, not a list of users); on Discord in the bot's DM and, in
 * servers, to members who may Manage Server. Anyone else who runs it is refused privately.
 */
export type CommandScope = "private" | "group" | "group-admin" | "bot-admin";

/** One named value of a command, asked for on its own where the platform can (a Discord option). */
export interface CommandOption {
  /** 1–32 of a-z, 0-9, - and _ (Discord's limit). */
  name: string;
  /** 1–100 characters. */
  description: string;
  required?: boolean;
  /** The only values it takes (Discord offers them as a list; at most 25). */
  choices?: readonly string[];
}

export interface CommandSpec {
  name: CommandName;
  /** 1–100 characters (Discord's limit; Telegram allows 256). */
  description: string;
  /** The menus that list it; a command left out of a menu still works when typed. */
  scopes: readonly CommandScope[];
  /** The answer is one person's (usage, memory, data): ephemeral where the platform can. */
  privateAnswer?: boolean;
  /**
   * What the command takes after its name, when it takes anything (Discord shows it as the
   * slash command's optional `text` option; 1–100 characters).
   */
  argument?: string;
  /**
   * What the command takes as named values instead of one `argument` (Discord asks for each):
   * the typed text is their values in this order, after the subcommand's name if any.
   */
  options?: readonly CommandOption[];
  /** The command's one fixed first word, as in `/pair approve CODE` (a Discord subcommand holding `options`). */
  subcommand?: { name: string; description: string };
}

const EVERYWHERE: readonly CommandScope[] = ["private", "group", "group-admin"];

/**
 * The command menu, one registry for every platform (issue 30): Telegram's per-scope menus
 * (setMyCommands) and Discord's application commands are both built from it. Order is menu order.
 */
export const COMMAND_MENU: readonly CommandSpec[] = [
  { name: "help", description: "What I can do and how to use me", scopes: EVERYWHERE },
  { name: "new", description: "Start a fresh conversation (the old one is archived)", scopes: EVERYWHERE },
  { name: "compress", description: "Compact the conversation now, optionally with a focus", scopes: EVERYWHERE, argument: "What the summary should focus on" },
  { name: "status", description: "Model, context use and session age", scopes: EVERYWHERE },
  { name: "usage", description: "Tokens used, cost, what compaction saved", scopes: EVERYWHERE, privateAnswer: true },
  { name: "stop", description: "Stop the answer in progress", scopes: EVERYWHERE },
  { name: "context", description: "What fills the context window, and the last compaction", scopes: EVERYWHERE },
  { name: "memory", description: "What I remember here; /memory forget <id|text>", scopes: EVERYWHERE, privateAnswer: true, argument: "forget <id|text>, or share" },
  { name: "forget", description: "Forget a fact: from memory and from the summary", scopes: EVERYWHERE, argument: "The fact to forget" },
  { name: "pin", description: "Keep a fact verbatim in every context", scopes: EVERYWHERE, argument: "The fact to keep" },
  { name: "unpin", description: "Remove a pinned fact", scopes: EVERYWHERE, argument: "The pin's id" },
  { name: "model", description: "Show or switch this chat's model", scopes: EVERYWHERE, argument: "A model's name, or default" },
  { name: "persona", description: "How I come across in this chat (a chat-wide setting)", scopes: ["private", "group-admin"], argument: "A persona's name or your own words, or off" },
  { name: "tools", description: "The tools I can use in this chat", scopes: EVERYWHERE },
  { name: "reminders", description: "Your reminders and scheduled tasks", scopes: EVERYWHERE, argument: "cancel, pause, resume or edit <id> …" },
  { name: "checkin", description: "Check-ins: I look in every few hours and write if it is worth it", scopes: EVERYWHERE, argument: "every 4h [what to watch], on or off" },
  { name: "timezone", description: "This chat's time zone: show or set it", scopes: EVERYWHERE, argument: "A zone like Europe/Berlin, or default" },
  { name: "voice", description: "Voice replies: on, off, or auto (a voice note gets a voice note)", scopes: ["private", "group-admin"], argument: "on, off or auto" },
  { name: "export", description: "Your conversations and memory as files (private chat)", scopes: ["private"], privateAnswer: true },
  {
    name: "budget", description: "Admins: see or set the spending limit of a chat or a user", scopes: ["bot-admin"], privateAnswer: true,
    options: [
      { name: "chat", description: "here, a chat key (tg:-100123, dc:456) or user:<key> (user:tg:42)", required: true },
      { name: "period", description: "The limit to set (leave empty to see the budget)", choices: ["daily", "monthly"] },
      { name: "amount", description: "$5, 200000 tokens, off (no limit) or default (the config's)" },
    ],
  },
  {
    name: "pair", description: "Admins: let a new user in with the code they were given", scopes: ["bot-admin"], privateAnswer: true,
    subcommand: { name: "approve", description: "Approve a pairing request by its code" },
    options: [{ name: "code", description: "The code the new user was given (codes last an hour)", required: true }],
  },
];

/** The menu of one scope, in order. */
export function commandMenu(scope: CommandScope): CommandSpec[] {
  return COMMAND_MENU.filter((spec) => spec.scopes.includes(scope));
}
