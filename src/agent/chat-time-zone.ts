/** Which time zone a chat's messages, reminders and summaries are read in. */
import type { SessionState } from "../session/state.js";

/** The chat's time zone: its own (/timezone) when set, else the deployment's TZ. */
export function chatTimeZone(state: SessionState, fallback: string): string {
  return state.chat?.timeZone ?? fallback;
}
