/** The system prompt at the head of the live context, with the chat's persona. */
import { withPersona } from "../models/persona.js";
import type { SessionState } from "../session/state.js";

/**
 * The system prompt heads the live context. It is written once and stays byte-stable (prompt
 * caching); when the operator changes it, it is replaced once, keeping the compaction note.
 */
export function ensureSystemPrompt(state: SessionState, basePrompt: string, newId: () => string, now: number): void {
  // The chat's persona is part of the system prompt, so it stays in the cache-stable prefix.
  const systemPrompt = withPersona(basePrompt, state);
  const first = state.live[0];
  if (first?.role === "system") {
    if (state.engine.systemPromptBase === systemPrompt) return;
    const note = typeof state.engine.systemPromptNote === "string" ? state.engine.systemPromptNote : "";
    state.live[0] = { ...first, content: systemPrompt + note, tokens: undefined };
  } else {
    state.live.unshift({ id: newId(), at: now, role: "system", content: systemPrompt });
  }
  state.engine.systemPromptBase = systemPrompt;
}
