export { ConsoleAdapter, type ConsoleAdapterOptions } from "./console-adapter.js";
export { PlainConsoleIo, type ConsoleIo } from "./console-io.js";
export { consoleMode, type ConsoleMode } from "./console-mode.js";
export { TerminalChat, type TerminalChatOptions } from "./terminal.js";
