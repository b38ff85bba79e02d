/**
 * What a part falls back to when Telegram refuses its formatting (issue 30): a reply is never
 * lost to a 400 about its text. Any 400 on a formatted part that does not say the chat itself
 * refuses (gone, bot removed, no right to write, topic closed) is taken as a refusal of the
 * formatting — "can't parse entities", ENTITIES_TOO_LONG, an entity Telegram does not accept —
 * and the part is sent again in simpler forms: the same HTML with its links written out
 * (`label (url)`: no text_link entities, whose URLs are what makes entities too long), then
 * plain text with the URLs, then plain text alone. Pure; no grammY.
 */
import { decodeEntities, escapeHtml, htmlToPlainText } from "./render.js";
import { parsedLength, TELEGRAM_MESSAGE_LIMIT } from "./split.js";

/** 400 descriptions that mean the chat refuses any message: simpler text cannot help. */
const CHAT_REFUSES = /chat not found|chat_write_forbidden|chat_send_\w*_forbidden|not enough rights|have no rights|need administrator rights|chat_admin_required|bot was kicked|bot is not a member|peer_id_invalid|user_is_blocked|user_banned_in_channel|channel_private|topic_closed|topic_deleted|message thread not found|group chat was upgraded|chat was deactivated|chat_restricted|user_deactivated|chat was deleted/i;

/** Whether a 400's description means the chat (not the text) refused the message. */
export function chatRefuses(description: string): boolean {
  return CHAT_REFUSES.test(description);
}

export interface PartForm {
  text: string;
  /** HTML, or plain text (no parse_mode). */
  html: boolean;
  /** For the log line. */
  form: "unlinked" | "plain-with-urls" | "plain";
}

/** The HTML with every link written out as `label (url)` (its label alone when that is the URL). */
export function unlinkHtml(html: string): string {
  return html.replace(/<a href="([^"]*)">([\s\S]*?)<\/a>/g, (_match, href: string, label: string) => {
    const url = decodeEntities(href);
    return decodeEntities(label.replace(/<[^>]*>/g, "")) === url ? label : `${label} (${escapeHtml(url)})`;
  });
}

/** The simpler forms of a refused HTML part, simplest last; each fits one message. */
export function simplerForms(html: string): PartForm[] {
  const forms: PartForm[] = [];
  const unlinked = unlinkHtml(html);
  if (unlinked !== html && parsedLength(unlinked) <= TELEGRAM_MESSAGE_LIMIT) forms.push({ text: unlinked, html: true, form: "unlinked" });
  const withUrls = htmlToPlainText(html, { linkUrls: true });
  const plain = htmlToPlainText(html);
  if (withUrls !== plain && withUrls.length <= TELEGRAM_MESSAGE_LIMIT) forms.push({ text: withUrls, html: false, form: "plain-with-urls" });
  forms.push({ text: plain, html: false, form: "plain" });
  return forms;
}
