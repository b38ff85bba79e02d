/**
 * `/export` (docs/memory.md "Data rights"): the user's memory and private conversations as
 * files in this chat. Only in a private chat: the export is one person's, and a group would
 * see it.
 */
import { UPLOAD_MAX_BYTES, type ReplyDocument } from "../../core/channel.js";
import type { CommandContext } from "./command-context.js";
import { exportFiles } from "./export-files.js";

export const EXPORT_IN_GROUP_TEXT = "Your export holds your private conversations and what I remember about you, so I only send it in a private chat: write to me directly and send /export there.";

export async function exportCommand(context: CommandContext): Promise<{ text: string; documents?: ReplyDocument[] }> {
  const { entry, engine } = context;
  if (entry.chatType !== "private") return { text: EXPORT_IN_GROUP_TEXT };
  if (!engine.exportUser) return { text: "Exports are not available here." };
  const data = await engine.exportUser({ platform: entry.platform, userId: entry.userId });
  const files = exportFiles(data, UPLOAD_MAX_BYTES[entry.platform]);
  const names = files.documents.map((document) => document.filename).join(", ");
  return {
    text: [
      `Your export: ${files.messages} messages in ${files.conversations} ${files.conversations === 1 ? "conversation" : "conversations"} (archived ones included) and ${files.facts} remembered ${files.facts === 1 ? "fact" : "facts"}, as Markdown to read and JSON with everything.`,
      `Files: ${names}. This message and my answer to it are not in it yet.`,
    ].join("\n"),
    documents: files.documents,
  };
}
