/**
 * Long-term memory (issue #16, docs/memory.md): per-user and per-chat facts on Redis, the
 * `memory` tool, the snapshot and pins the requests carry, the flush before compaction, and
 * the user's data rights (export, delete).
 */
export { ownerOf, memoryKeys, ownerKey, userRef, parseUserRef, type MemoryOwner } from "./owner.js";
export { MemoryStore, charCount, type MemoryDoc, type MemoryFact } from "./store.js";
export { MemoryService, memoryOf, type MemorySettings } from "./service.js";
export { createMemoryTool, runMemoryAction, MEMORY_TOOL_DEFINITION } from "./tool.js";
export { flushMemory, FLUSH_MARKER, FLUSH_INSTRUCTION } from "./flush.js";
export { renderSnapshot, renderPins, systemBlock, systemBlockText, MEMORY_HEADER, PINS_HEADER } from "./snapshot.js";
export { deleteUserData, exportUserData, userSessions, directSessionKeys, type UserRef, type UserExport, type DeleteUserReport } from "./user-data.js";
export { createMemoryHooks, type MemoryHooksOptions } from "./context-hooks.js";
