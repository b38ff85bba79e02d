/**
 * What a picture costs in the context (docs/media.md), so hygiene and compaction see images:
 * OpenAI's published tile formula — `low` is a flat 85 tokens; `high` (and `auto`, counted as
 * high to err towards compacting early) scales the picture to fit 2048×2048, then its short side
 * to 768, and charges 170 per 512-pixel tile plus 85. Without dimensions, a 1024×1024 picture's
 * 765. Other vendors differ (Anthropic: width×height/750); the calibration against the
 * provider's reported prompt tokens corrects the total.
 */
import { inlineImages } from "../core/attachments.js";
import type { ChatMessage } from "../core/messages.js";

export const LOW_DETAIL_IMAGE_TOKENS = 85;
export const UNKNOWN_SIZE_IMAGE_TOKENS = 765;

export function imageTokens(width: number | undefined, height: number | undefined, detail: "auto" | "low" | "high" = "auto"): number {
  if (detail === "low") return LOW_DETAIL_IMAGE_TOKENS;
  if (!width || !height || width <= 0 || height <= 0) return UNKNOWN_SIZE_IMAGE_TOKENS;
  let w = width;
  let h = height;
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w *= fit;
  h *= fit;
  const shortSide = Math.min(w, h);
  if (shortSide > 768) {
    const scale = 768 / shortSide;
    w *= scale;
    h *= scale;
  }
  const tiles = Math.ceil(w / 512) * Math.ceil(h / 512);
  return 170 * tiles + 85;
}

/** Image parts a message sends, in tokens (0 for messages without inline pictures). */
export function attachmentTokens(message: ChatMessage): number {
  if (message.role !== "user") return 0;
  let total = 0;
  for (const image of inlineImages(message.attachments)) total += imageTokens(image.width, image.height);
  return total;
}
