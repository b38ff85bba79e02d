import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../src/core/messages.js";
import { createRecallTool } from "../../../src/tools/builtin/recall.js";
import type { ToolContext } from "../../../src/tools/registry.js";

const TOKEN = "123456789:SECRET-bot-token";

describe("recall of a message with attachments", () => {
  const photo: ChatMessage = {
    id: "m7", role: "user", content: "[photo photo-u1.jpg, 83 KB, 1280×720]\nwhat is this?",
    attachments: [{
      kind: "image", label: "photo", name: "photo-u1.jpg", mimeType: "image/png", size: 85_000, width: 1280, height: 720, inline: false,
      source: { platform: "telegram", fileId: "AgACfile1", fileUniqueId: "u1" }, sha256: "ab".repeat(32), description: "A red square on a white background.",
    }],
  };
  const report: ChatMessage = {
    id: "m9", role: "user", content: "[file report.pdf, 2 MB, its text:]\n…",
    attachments: [{ kind: "document", label: "file", name: "report.pdf", source: { platform: "telegram", fileId: "BQfile" }, outputId: "file-0123456789ab", extractedChars: 90_000 }],
  };
  const context: ToolContext = {
    sessionKey: "tg:1",
    signal: new AbortController().signal,
    now: () => 0,
    transcript: { get: async (id) => [photo, report].find((message) => message.id === id), search: async () => ({ messages: [photo], scanned: 1, continueBefore: undefined }) },
    outputs: { read: async () => undefined },
  };

  it("returns the picture's reference (platform ids only), hash and what the model said it showed", async () => {
    const text = String(await createRecallTool().run({ id: "m7" }, context));
    expect(text).toContain("what is this?");
    expect(text).toContain("[attachment: photo photo-u1.jpg, image/png, 85000 bytes, sha256 abab");
    expect(text).toContain("source telegram file AgACfile1]");
    expect(text).toContain("[described when shown: A red square on a white background.]");
    expect(text).not.toContain(TOKEN);
  });

  it("points at a long document's stored text", async () => {
    expect(String(await createRecallTool().run({ id: "m9" }, context))).toContain('[its whole text: recall with id "file-0123456789ab"]');
  });

  it("finds a picture by words of its description", async () => {
    expect(String(await createRecallTool().run({ query: "red square" }, context))).toMatch(/^m7 \(user\): .*red square/);
  });
});
