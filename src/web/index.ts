export { createWebConsole, type WebConsoleOptions } from "./console.js";
export { startWebConsole } from "./start.js";
