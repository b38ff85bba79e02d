/**
 * The fakes judge voice uploads as the platforms do, without our code: Telegram's sendVoice takes
 * only Ogg/Opus and a caption of at most 1,024 characters after parsing; Discord's voice message
 * takes no text, one Ogg/Opus attachment, and its duration and waveform.
 */
import { describe, expect, it } from "vitest";
import { checkVoice } from "../../fakes/fake-telegram-voice.js";
import { voiceMessageRefusal } from "../../fakes/fake-discord-voice.js";
import { isOggOpus, makeOggOpus } from "../../helpers/ogg-opus.js";

const upload = (bytes: Buffer, contentType = "audio/ogg") => [{ name: "f1", filename: "voice.ogg", contentType, bytes }];

describe("fake platforms and voice", () => {
  it("telegram: Ogg/Opus with a caption within 1,024 characters after parsing is a voice note; anything else is refused", async () => {
    const opus = await makeOggOpus(0.5);
    expect(isOggOpus(opus)).toBe(true);
    expect(checkVoice({ voice: "attach://f1", caption: `<b>${"x".repeat(1_024)}</b>`, parse_mode: "HTML" }, upload(opus), false)).toMatchObject({ caption: { text: "x".repeat(1_024) } });
    expect(checkVoice({ voice: "attach://f1", caption: "x".repeat(1_025) }, upload(opus), false)).toEqual({ error: "Bad Request: message caption is too long" });
    expect(checkVoice({ voice: "attach://f1" }, upload(Buffer.from("ID3 an mp3")), false)).toHaveProperty("error");
    expect(checkVoice({ voice: "attach://f1" }, upload(opus), true)).toEqual({ error: "Bad Request: VOICE_MESSAGES_FORBIDDEN" });
  });

  it("discord: a voice message without text, with one Ogg/Opus file and its metadata, passes; each rule is Discord's code", async () => {
    const files = upload(await makeOggOpus(0.5));
    const metadata = { attachments: [{ id: "0", duration_secs: 0.5, waveform: "AAD/" }] };
    expect(voiceMessageRefusal(metadata, files, false)).toBeUndefined();
    expect(voiceMessageRefusal({ ...metadata, content: "hi" }, files, false)?.code).toBe(50159);
    expect(voiceMessageRefusal(metadata, [...files, ...files], false)?.code).toBe(50160);
    expect(voiceMessageRefusal(metadata, upload(Buffer.from("not ogg")), false)?.code).toBe(50160);
    expect(voiceMessageRefusal({ attachments: [{ id: "0" }] }, files, false)?.code).toBe(50161);
    expect(voiceMessageRefusal(metadata, files, true)?.code).toBe(50173);
  });
});
