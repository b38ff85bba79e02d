/** The first run's public surface (`npm run setup`; src/cli/setup.ts is its command line). */
export { defaultsAsker, MissingAnswerError, terminalAsker, type Asker } from "./asker.js";
export { StepFailedError } from "./model-step.js";
export { PRESETS, type ProviderPreset } from "./presets.js";
export { runSetup, type SetupOptions } from "./run-setup.js";
