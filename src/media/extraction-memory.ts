/**
 * What became of a document's extraction, remembered across retries of the turn and across
 * workers: a file that was refused (or whose extraction never answered because the process
 * died) is not downloaded or parsed again by a retry; the user got the notice once.
 */
import { createHash } from "node:crypto";
import type { Attachment } from "../core/attachments.js";

/** `started`: an extraction began and nothing was heard of it since (the worker died mid-way). */
export type ExtractionVerdict = "started" | { refused: string };

export interface ExtractionMemory {
  get(file: string): Promise<ExtractionVerdict | undefined>;
  set(file: string, verdict: ExtractionVerdict): Promise<void>;
  /** The extraction answered (or was stopped by the user): nothing to remember. */
  clear(file: string): Promise<void>;
}

/** A week: longer than any retry or re-delivery of the message that brought the file. */
const REMEMBER_S = 7 * 24 * 3600;

/** The file's identity on its platform (Telegram's unique id outlives a file_id), hashed. */
export function fileKey(attachment: Attachment): string {
  const source = attachment.source;
  const identity = source.platform === "telegram" ? `telegram:${source.fileUniqueId ?? source.fileId}`
    : source.platform === "discord" ? `discord:${source.attachmentId}`
    : `url:${source.url}`;
  return createHash("sha256").update(identity).digest("hex").slice(0, 32);
}

export function redisExtractionMemory(redis: { get(key: string): Promise<string | null>; set(key: string, value: string, mode: "EX", seconds: number): Promise<unknown>; del(key: string): Promise<number> }, prefix: string): ExtractionMemory {
  const key = (file: string) => `${prefix}:extract:${file}`;
  return {
    async get(file) {
      const value = await redis.get(key(file));
      if (value === null) return undefined;
      return value === "started" ? "started" : { refused: value.replace(/^refused:/, "") };
    },
    async set(file, verdict) {
      await redis.set(key(file), verdict === "started" ? "started" : `refused:${verdict.refused}`, "EX", REMEMBER_S);
    },
    async clear(file) {
      await redis.del(key(file));
    },
  };
}
