/**
 * The doctor's public surface. A capability with something to check (the MCP room: one check
 * per configured server) implements `DoctorCheck` and is passed to `runDoctor` as `extraChecks`.
 * main.ts imports settings.ts and check.ts directly: they are light, so a refusal comes at once.
 */
export { EXIT_CODES, exitCodeOf, fail, formatResult, ok, skip, warn, type CheckGroup, type CheckResult, type DoctorCheck } from "./check.js";
export { runDoctor, type DoctorOptions } from "./doctor.js";
export { checkBeforeStart, type StartupCheckOptions } from "./startup.js";
