import { describe, expect, it } from "vitest";
import type { ReplyDocument } from "../../../src/core/channel.js";
import { reply, useAdapterHarness } from "./harness.js";

/**
 * A reply's files (`/export`) through the real discord.js client to the fake Discord, which
 * parses the multipart upload itself: each file is one more part after the text, with a nonce of
 * its own, so a resumed reply skips what went out and a repeated one posts nothing twice.
 */

const file = (filename: string, text: string): ReplyDocument => ({ filename, mime: "text/plain", base64: Buffer.from(text).toString("base64") });

describe("DiscordAdapter: files of a reply", () => {
  const h = useAdapterHarness();
  const withFiles = () => reply("Your export: two files.", { documents: [file("a.md", "# markdown ✓"), file("a.json", "{\"json\":true}")] });

  it("sends the text, then each file as a message of its own, reporting parts 0, 1, 2", async () => {
    const adapter = await h.startAdapter();
    const parts: number[] = [];
    const lastFlags: boolean[] = [];
    await adapter.send(withFiles(), { fromPart: 0, onPartSent: async (index, { last }) => void (parts.push(index), lastFlags.push(last)) });
    expect(parts).toEqual([0, 1, 2]);
    // The text's only part is not the reply's last: the files follow it.
    expect(lastFlags).toEqual([false, false, true]);
    expect(h.fake.uploads.map((upload) => [upload.filename, upload.bytes.toString("utf8")])).toEqual([["a.md", "# markdown ✓"], ["a.json", "{\"json\":true}"]]);
    expect(String(h.fake.sentMessages[0]?.content)).toBe("Your export: two files.");
  });

  it("resumes from a file: the text and the files before it are not sent again", async () => {
    const adapter = await h.startAdapter();
    const parts: number[] = [];
    await adapter.send(withFiles(), { fromPart: 2, onPartSent: async (index) => void parts.push(index) });
    expect(parts).toEqual([2]);
    expect(h.fake.uploads.map((upload) => upload.filename)).toEqual(["a.json"]);
    expect(h.fake.sentMessages.filter((body) => String(body.content ?? "") !== "")).toHaveLength(0);
  });

  it("sent again whole (a lost answer), Discord returns the messages its nonces already made: no file twice", async () => {
    const adapter = await h.startAdapter();
    await adapter.send(withFiles(), { fromPart: 0, onPartSent: async () => {} });
    await adapter.send(withFiles(), { fromPart: 0, onPartSent: async () => {} });
    expect(h.fake.uploads.map((upload) => upload.filename)).toEqual(["a.md", "a.json"]);
  });
});
