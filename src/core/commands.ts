/**
 * The product's chat commands (SPEC §5), below every layer: the worker interprets them, and the
 * platform adapters need the same names to tell our commands from other bots' in a group.
 */
export const COMMAND_NAMES = ["help", "new", "reset", "compress", "status", "usage", "stop", "start", "tools", "reminders", "memory", "forget", "pin", "unpin", "context", "model", "persona", "timezone", "budget", "pair", "export"] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];
