/**
 * `/voice on|off|auto` (docs/media.md, "Voice replies"): a chat-wide setting kept in the
 * session's `chat` settings (it survives /new), read by the chat handler after each answer. In
 * groups only admins change it.
 */
import type { InboundMessage } from "../../core/channel.js";
import { mayChangeChat, type Admins } from "../../models/commands.js";
import type { SessionState } from "../../session/state.js";

/** The platforms with voice notes: the console has none. */
export const VOICE_PLATFORMS: ReadonlySet<InboundMessage["platform"]> = new Set(["telegram", "discord"]);

const DESCRIBED = {
  on: "I answer every message with a voice note (and show the text when it is long or has code)",
  auto: "I answer a voice note with a voice note, text with text",
  off: "I answer in text",
} as const;

export interface VoiceCommandInput {
  state: SessionState;
  entry: InboundMessage;
  admins: Admins;
  args: string;
  /** A speech endpoint is configured for this worker. */
  available: boolean;
}

export function voiceCommand({ state, entry, admins, args, available }: VoiceCommandInput): string {
  if (!available || !VOICE_PLATFORMS.has(entry.platform)) return "Voice replies are not available here.";
  const wanted = args.trim().toLowerCase();
  const current = state.chat?.voice ?? "off";
  if (wanted === "") return [`Voice replies: ${current} — ${DESCRIBED[current]}.`, "Change with /voice on, /voice auto or /voice off."].join("\n");
  if (wanted !== "on" && wanted !== "off" && wanted !== "auto") return `"${args.trim()}" is not a choice: /voice on, /voice auto or /voice off.`;
  if (!mayChangeChat(entry, admins)) return "Only an admin can change the voice replies of a group.";
  if (wanted === "off") {
    if (state.chat) delete state.chat.voice;
  } else state.chat = { ...state.chat, voice: wanted };
  return `Voice replies ${wanted}: ${DESCRIBED[wanted]}.`;
}
