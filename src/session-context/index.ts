/**
 * The context engine bound to a session's state (src/context is the pure engine): hygiene,
 * in-loop and reactive compaction, idle compaction, calibration against the API's counts, and
 * the hooks the rest of the product hangs on a compaction. The turn and the model catalogue
 * both use it; it knows neither.
 */
export type { ContextManager, CompactionScope, ContextHooks, FoldInput } from "./context-manager.js";
export { createContextManager, dropAnsweredImages, type ContextSettings } from "./session-context.js";
