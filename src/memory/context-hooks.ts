/**
 * Binds long-term memory to the context engine: the snapshot and pins every request carries,
 * the silent flush before a fold, and after a fold a new snapshot, the record `/context` shows
 * and the one-line notice (COMPACTION_NOTICE).
 */
import type { FoldRecord } from "../core/memory.js";
import type { LlmClient } from "../core/llm.js";
import { AbortedError } from "../errors.js";
import { flushMemory } from "./flush.js";
import { memoryOf, type MemoryService } from "./service.js";
import { systemBlockText } from "./snapshot.js";
import type { ContextHooks } from "../session-context/index.js";

export interface MemoryHooksOptions {
  service: MemoryService;
  llm: LlmClient;
  /** MEMORY_FLUSH_MAX_TOKENS; 0 turns the flush off. */
  flushMaxTokens: number;
  /** COMPACTION_NOTICE; unset: brief in private chats, off in groups. */
  compactionNotice?: "off" | "brief" | undefined;
  now(): number;
}

/** The flush instruction and the memory tool's definition, with a margin. */
const FLUSH_ROOM_TOKENS = 600;

export function createMemoryHooks(options: MemoryHooksOptions): ContextHooks {
  const { service } = options;
  return {
    systemBlock: (state) => systemBlockText(state.memory),

    async beforeFold(state, fold, scope) {
      const owner = state.memory?.owner;
      if (!owner || options.flushMaxTokens <= 0) return;
      const { reason } = fold;
      // A context that leaves no room for the flush step and its answer goes straight to the fold.
      if (fold.tokens + options.flushMaxTokens + FLUSH_ROOM_TOKENS > fold.contextWindow) {
        scope.log.info({ tokens: fold.tokens, contextWindow: fold.contextWindow }, "memory-flush-skipped-no-room");
        return;
      }
      try {
        await flushMemory({
          llm: options.llm, service, owner, context: fold.context, prepareRequest: fold.prepareRequest, tools: fold.tools,
          maxTokens: options.flushMaxTokens, signal: scope.signal, budget: scope.budget, log: scope.log, now: options.now(),
        });
      } catch (error) {
        if (scope.signal.aborted || error instanceof AbortedError) throw error;
        // The fold goes on: losing a flush is better than never compacting.
        scope.log.warn({ err: error, reason }, "memory-flush-failed");
      }
    },

    async afterCompaction(state, outcome, scope) {
      const memory = memoryOf(state);
      const folded = outcome.folded;
      const times = folded.map((message) => message.at).filter((at): at is number => typeof at === "number");
      const fold: FoldRecord = {
        at: options.now(),
        count: folded.length,
        reason: outcome.reason,
        ...(times.length > 0 ? { from: Math.min(...times), to: Math.max(...times) } : {}),
        ...(folded.length > 0 ? { firstId: folded[0]!.id, lastId: folded[folded.length - 1]!.id } : {}),
      };
      memory.lastFold = fold;
      try {
        await service.refreshSnapshot(state);
      } catch (error) {
        // The old snapshot stays; the next compaction tries again.
        scope.log.warn({ err: error }, "memory-snapshot-failed");
      }
      const setting = options.compactionNotice ?? (memory.owner?.scope === "chat" ? "off" : "brief");
      // No line after an idle compaction: nobody was waiting, and the next answer is not about it (/context shows it).
      if (setting === "brief" && outcome.status === "compacted" && outcome.reason !== "manual" && outcome.reason !== "idle" && folded.length > 0) {
        memory.notice = `🧹 compacted ${folded.length} older messages into a summary — /context for details`;
      }
    },
  };
}
