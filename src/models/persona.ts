/**
 * A chat's persona (issue #17): text added to the system prompt, set with `/persona`. It sits at
 * the end of the system message, so the prompt stays byte-stable (and cached) between changes.
 */
import type { SessionState } from "../session/state.js";

/** The system prompt of this chat: the operator's, then the persona when one is set. */
export function withPersona(systemPrompt: string, state: Pick<SessionState, "chat">): string {
  const persona = state.chat?.persona;
  return persona ? `${systemPrompt}\n\n${persona}` : systemPrompt;
}

/** Longest persona a chat may set (a persona is sent with every request). */
export const MAX_PERSONA_CHARS = 4_000;
