/** What a chat command runs with and what it gives back; each command module imports only this. */
import type { InboundMessage, ReplyDocument } from "../../core/channel.js";
import type { ToolDefinition } from "../../core/messages.js";
import type { SessionState } from "../../session/state.js";
import type { CompactionScope } from "../../session-context/index.js";
import type { CommandPorts } from "../ports.js";

export interface CommandContext {
  engine: CommandPorts;
  state: SessionState;
  sessionKey: string;
  scope: CompactionScope;
  now: number;
  /** `/tools`: what this chat can use (the chat's access decides). */
  describeTools(): Promise<string>;
  /** `/context`, `/compress`, `/status`: the tool definitions a turn of this chat (this speaker) offers. */
  toolDefinitions(): Promise<ToolDefinition[]>;
  /** The message that carried the command: who asks, from which chat. */
  entry: InboundMessage;
  /** The chat's time zone (the session's own, else TZ). */
  timeZone: string;
}

export interface CommandOutcome {
  state: SessionState;
  text: string;
  /** `/new`: the old session's transcript is archived. */
  archive?: boolean;
  /** Files sent with the answer (`/export`). */
  documents?: ReplyDocument[];
  /** A refusal: for the asker only, where the platform can (OutboundReply.private). */
  refused?: boolean;
}
