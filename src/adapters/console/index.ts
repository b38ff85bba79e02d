export { ConsoleAdapter, type ConsoleAdapterOptions } from "./console-adapter.js";
