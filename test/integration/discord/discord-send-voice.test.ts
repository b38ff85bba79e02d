import { describe, expect, it } from "vitest";
import type { ReplyVoice } from "../../../src/core/channel.js";
import { makeOggOpus } from "../../helpers/ogg-opus.js";
import { reply, useAdapterHarness } from "./harness.js";

/**
 * A voice reply through the real discord.js client to the fake Discord (which checks a voice
 * message as Discord does: no text, one Ogg/Opus attachment with its duration and waveform): the
 * voice message is part 0 with a nonce of its own, the text's parts follow, a resumed reply skips
 * what went out, and a reply sent again whole posts nothing twice.
 */

async function voice(withText: boolean): Promise<ReplyVoice> {
  return { base64: (await makeOggOpus(1.2)).toString("base64"), durationS: 1.2, waveform: Buffer.from([0, 128, 255, 64]).toString("base64"), withText };
}

const IS_VOICE_MESSAGE = 1 << 13;

describe("DiscordAdapter: voice replies", () => {
  const h = useAdapterHarness();

  it("sends the voice message, then the text, reporting parts 0 and 1", async () => {
    const adapter = await h.startAdapter();
    const parts: Array<[number, boolean]> = [];
    await adapter.send(reply("The ferry leaves at nine.", { voice: await voice(true) }), { fromPart: 0, onPartSent: async (index, { last }) => void parts.push([index, last]) });
    expect(parts).toEqual([[0, false], [1, true]]);
    const [spoken, text] = h.fake.sentMessages;
    expect(Number(spoken?.flags) & IS_VOICE_MESSAGE).toBe(IS_VOICE_MESSAGE);
    expect(String(text?.content)).toBe("The ferry leaves at nine.");
    expect(h.fake.uploads.map((upload) => [upload.filename, upload.attachment.duration_secs])).toEqual([["voice-message.ogg", 1.2]]);
  });

  it("a voice alone is one part; resumed after it, only the text goes out; sent again whole, nothing is posted twice", async () => {
    const adapter = await h.startAdapter();
    const parts: Array<[number, boolean]> = [];
    await adapter.send(reply("Short.", { voice: await voice(false) }), { fromPart: 0, onPartSent: async (index, { last }) => void parts.push([index, last]) });
    expect(parts).toEqual([[0, true]]);
    expect(h.fake.sentMessages).toHaveLength(1);

    const withText = reply("Now with its text.", { replyId: `${reply("").replyId}-2`, voice: await voice(true) });
    await adapter.send(withText, { fromPart: 1, onPartSent: async () => {} });
    expect(h.fake.uploads).toHaveLength(1);
    expect(h.fake.sentMessages.map((body) => String(body.content ?? ""))).toEqual(["", "Now with its text."]);

    await adapter.send(withText, { fromPart: 0, onPartSent: async () => {} });
    await adapter.send(withText, { fromPart: 0, onPartSent: async () => {} });
    // The first whole send made the voice message; the second got it and the text back by their nonces.
    expect(h.fake.uploads).toHaveLength(2);
    expect(h.fake.botMessages(reply("").target.chatId)).toHaveLength(3);
  });
});
