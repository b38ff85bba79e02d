import { describe, expect, it } from "vitest";
import type { Attachment } from "../../../src/core/attachments.js";
import type { ChatMessage } from "../../../src/core/messages.js";
import { attachmentTokens, imageTokens } from "../../../src/context/image-tokens.js";

const image = (fields: Partial<Attachment> = {}): Attachment => ({
  kind: "image", label: "photo", name: "p.jpg", source: { platform: "url", url: "http://x/p" }, inline: true, ...fields,
});

describe("image tokens (OpenAI's tile formula)", () => {
  it("charges 85 at low detail and 170 a tile plus 85 otherwise", () => {
    expect(imageTokens(4000, 3000, "low")).toBe(85);
    // 1024×1024 → 768×768 → 2×2 tiles.
    expect(imageTokens(1024, 1024, "high")).toBe(765);
    // 2048×4096 → 1024×2048 → 768×1536 → 2×3 tiles (OpenAI's documented example: 1105).
    expect(imageTokens(2048, 4096, "high")).toBe(1105);
    expect(imageTokens(512, 512)).toBe(255);
    expect(imageTokens(undefined, undefined)).toBe(765);
  });

  it("counts `auto` like `high`, and a size without dimensions at low detail still costs 85", () => {
    expect(imageTokens(2048, 4096, "auto")).toBe(imageTokens(2048, 4096, "high"));
    expect(imageTokens(undefined, undefined, "low")).toBe(85);
  });
});

describe("what a message's pictures cost in the context", () => {
  it("sums the inline pictures a user sent", () => {
    const message: ChatMessage = {
      id: "m1", role: "user", content: "two photos",
      attachments: [image({ width: 512, height: 512 }), image({ name: "q.jpg", width: 1024, height: 1024 })],
    };
    expect(attachmentTokens(message)).toBe(255 + 765);
  });

  it("charges nothing for pictures that are no longer inline, failed, or not pictures", () => {
    const message: ChatMessage = {
      id: "m1", role: "user", content: "files",
      attachments: [
        image({ width: 512, height: 512, inline: false }),
        image({ width: 512, height: 512, problem: "too-large" }),
        { ...image({ width: 512, height: 512 }), kind: "document" } as Attachment,
      ],
    };
    expect(attachmentTokens(message)).toBe(0);
    expect(attachmentTokens({ id: "m2", role: "user", content: "none" })).toBe(0);
  });
});
