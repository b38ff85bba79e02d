/** What the user is told when an attachment cannot be downloaded (src/media/resolve.ts). */
import { describe, expect, it } from "vitest";
import type { Attachment } from "../../../src/core/attachments.js";
import { silentLogger } from "../../../src/logger.js";
import { ImageCache } from "../../../src/media/images.js";
import { createMediaResolver } from "../../../src/media/resolve.js";
import { inbound } from "../../helpers/recording-adapter.js";

const source = { platform: "url", url: "http://files.invalid/x" } as const;
const voice: Attachment = { kind: "audio", label: "voice message", name: "voice.ogg", voice: true, source };
const document: Attachment = { kind: "document", label: "file", name: "notes.txt", source };
const photo: Attachment = { kind: "image", label: "photo", name: "photo.jpg", inline: true, source };

async function noticeFor(failure: "too-large" | "failed", attachments: Attachment[]) {
  const resolver = createMediaResolver({
    fetcher: async () => ({ ok: false, failure, detail: "refused by the test" }),
    transcriber: async () => "never reached",
    limits: { maxAudioBytes: 1_048_576, maxFileBytes: 2_097_152, timeoutMs: 1_000, maxMessageChars: 1_000, extract: { memoryMb: 256, timeoutMs: 30_000, maxPages: 500, maxChars: 400_000 } },
    images: new ImageCache(),
  });
  const resolved = await resolver.resolve([inbound({ text: "", attachments })], { log: silentLogger, saveText: async () => undefined });
  // Nothing usable: the message leaves the batch, and its notice is the whole answer.
  expect(resolved.entries).toEqual([]);
  return { text: resolved.notices.map((notice) => notice.text).join("\n"), attachments: resolved.notices[0]?.entry.attachments ?? [] };
}

describe("attachments that cannot be downloaded", () => {
  it("too large: names each one with the limit that applies to its kind", async () => {
    const { text, attachments } = await noticeFor("too-large", [voice, document, photo]);
    expect(text).toBe([
      "Sorry, I couldn't use some of what you sent:",
      "• voice message: it is larger than 1 MB, the most I transcribe",
      "• notes.txt: it is larger than 2 MB, the most I read",
      "• photo.jpg: it is larger than 2 MB",
    ].join("\n"));
    expect(attachments.map((attachment) => attachment.problem)).toEqual(["too-large", "too-large", "too-large"]);
    // A picture that was not downloaded is not sent to the model.
    expect(attachments[2]?.inline).toBe(false);
  });

  it("failed: says it could not be downloaded", async () => {
    const { text, attachments } = await noticeFor("failed", [document]);
    expect(text).toBe("Sorry, I couldn't use your notes.txt: I couldn't download it.");
    expect(attachments[0]?.problem).toBe("failed");
  });
});
