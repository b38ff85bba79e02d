/**
 * GIFs on Discord (issue 30, Deliver 4). A GIF picked from Discord's GIF picker, or a Tenor or
 * GIPHY link, is no attachment: the message's text is the link, and Discord adds an embed of type
 * `gifv` (an MP4 no model reads, and a still thumbnail). It is read as Telegram's animations are
 * (telegram/attachments.ts): the model sees its first frame, the thumbnail, as a picture named
 * after the link ("[GIF (its first frame) cat-typing-gif-12002898, 498×373]"), and a text that
 * was only the link is dropped. Discord adds the embed when it has the link's preview at hand;
 * otherwise it follows in a MESSAGE_UPDATE a moment later (`awaitsGifEmbed`: the intake waits for
 * it, bounded). Pure; no discord.js.
 */
import type { Attachment } from "../../core/attachments.js";

/** A `gifv` embed, as describe-message.ts reads it. */
export interface GifFacts {
  /** The page the GIF came from (the link in the text). */
  url: string;
  /** The still picture Discord keeps of it (its media proxy's URL when it gives one). */
  thumbnail: { url: string; width: number | null; height: number | null } | null;
}

/** Links of the GIF services whose previews Discord shows as `gifv` embeds. */
const GIF_LINK = /^https?:\/\/(?:[\w-]+\.)*(?:tenor\.com|giphy\.com|gph\.is)\/\S*$/i;

/** A message that is only a GIF service's link and has no `gifv` embed yet: Discord's preview is still coming. */
export function awaitsGifEmbed(facts: { content: string; gifs?: readonly GifFacts[] | undefined }): boolean {
  return (facts.gifs ?? []).length === 0 && GIF_LINK.test(facts.content.trim());
}

/** The GIFs' first frames, as pictures the worker fetches (a GIF without a thumbnail: none). */
export function gifAttachments(gifs: readonly GifFacts[]): Attachment[] {
  return gifs.flatMap((gif, index) => {
    const frame = gif.thumbnail;
    if (!frame) return [];
    return [{
      kind: "image" as const, label: "GIF (its first frame)", source: { platform: "url" as const, url: frame.url }, name: gifName(gif.url, index),
      ...(frame.width && frame.height ? { width: frame.width, height: frame.height } : {}), inline: true,
    }];
  });
}

/** The text without the GIFs' links when it was nothing but them (the GIF alone was sent). */
export function withoutGifLinks(text: string, gifs: readonly GifFacts[]): string {
  if (gifs.length === 0) return text;
  const links = new Set(gifs.map((gif) => gif.url));
  const words = text.trim().split(/\s+/).filter((word) => word !== "");
  return words.length > 0 && words.every((word) => links.has(word)) ? "" : text;
}

/** The link's last path segment ("cat-typing-gif-12002898"), which names the GIF. */
function gifName(url: string, index: number): string {
  try {
    const segment = new URL(url).pathname.split("/").filter((part) => part !== "").at(-1);
    if (segment) return decodeURIComponent(segment).slice(0, 100);
  } catch {
    // Not a URL: named by its place.
  }
  return `gif-${index + 1}`;
}
