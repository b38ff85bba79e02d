/**
 * Pictures, voice notes and files end to end (issue #14): the real grammY adapter ↔ the fake Bot
 * API (getFile and its file route), the real pipeline and worker, the fake LLM (which records the
 * content parts it gets and refuses pictures when it has no vision) and its fake transcription
 * endpoint. Every test ends with closeChecked: the bot token never reached a log line.
 */
import { describe, expect, it } from "vitest";
import type { Message } from "grammy/types";
import { imagePartsOf, lastUserText, textOf as contentText, type RecordedRequest } from "../fakes/fake-llm.js";
import { makePdf, makePng } from "../helpers/media-files.js";
import { writeConfigFile } from "../helpers/config-file.js";
import { ADA, DM, sleep, textOf, useTelegramE2e, type TelegramE2e } from "../helpers/telegram-pipeline.js";

const startE2e = useTelegramE2e();

let nextFile = 1;

/** A photo as Telegram sends it (two sizes); the larger one is downloadable. */
async function photo(run: TelegramE2e, width = 640, height = 480): Promise<Partial<Message>> {
  const id = `AgACphoto${nextFile++}`;
  const bytes = await makePng(width, height);
  run.telegram.addFile(id, bytes, `photos/${id}.jpg`);
  return {
    photo: [
      { file_id: `${id}-thumb`, file_unique_id: `${id}-t`, file_size: 900, width: 90, height: 67 },
      { file_id: id, file_unique_id: `${id}-u`, file_size: bytes.length, width, height },
    ],
  };
}

function voice(run: TelegramE2e, bytes: Buffer, announcedSize = bytes.length): Partial<Message> {
  const id = `AwACvoice${nextFile++}`;
  run.telegram.addFile(id, bytes, `voice/${id}.oga`);
  return { voice: { file_id: id, file_unique_id: `${id}-u`, duration: 3, mime_type: "audio/ogg", file_size: announcedSize } };
}

function document(run: TelegramE2e, name: string, mimeType: string, bytes: Buffer): Partial<Message> {
  const id = `BQACdoc${nextFile++}`;
  run.telegram.addFile(id, bytes, `documents/${id}`);
  return { document: { file_id: id, file_unique_id: `${id}-u`, file_name: name, mime_type: mimeType, file_size: bytes.length } };
}

const mainRequests = (run: TelegramE2e): RecordedRequest[] => run.llm.requests.filter((request) => !/summar/i.test(contentText(request.body.messages[0]?.content)));

describe("telegram media end to end", () => {
  it("a photo with a caption reaches the model as an image part, with its caption and placeholder as text", async () => {
    const e2e = await startE2e();
    const sent = e2e.telegram.pushMessage({ chat: DM, from: ADA, caption: "what colour is this?", ...(await photo(e2e, 640, 480)) });
    const [answer] = await e2e.waitForSent(DM.id, 1);
    expect(answer?.payload).toMatchObject({ reply_parameters: { message_id: sent.message?.message_id } });
    const request = e2e.llm.requests[0]!;
    const images = imagePartsOf(request);
    expect(images).toHaveLength(1);
    expect(images[0]?.url).toMatch(/^data:image\/png;base64,/);
    expect(images[0]?.detail).toBe("auto");
    const user = request.body.messages.findLast((message) => message.role === "user");
    expect(Array.isArray(user?.content)).toBe(true);
    expect(contentText(user?.content)).toMatch(/\[photo photo-.*\.jpg, .*640×480\]\nwhat colour is this\?/);
    // The image went to the model as bytes; the token-bearing file URL went nowhere.
    expect(JSON.stringify(request.body)).not.toContain(e2e.config.TELEGRAM_BOT_TOKEN!);
  });

  it("a model without vision gets the placeholder: auto learns from its refusal and sends no picture again", async () => {
    const e2e = await startE2e();
    e2e.llm.setVision(false);
    e2e.telegram.pushMessage({ chat: DM, from: ADA, caption: "and this one?", ...(await photo(e2e)) });
    const [first] = await e2e.waitForSent(DM.id, 1);
    expect(textOf(first)).toMatch(/^echo: \[photo photo-.*\]\nand this one\?$/);
    // The refused request, then the same one with the placeholder only.
    expect(imagePartsOf(e2e.llm.requests[0]!)).toHaveLength(1);
    expect(imagePartsOf(e2e.llm.requests[1]!)).toHaveLength(0);

    e2e.telegram.pushMessage({ chat: DM, from: ADA, caption: "one more", ...(await photo(e2e)) });
    await e2e.waitForSent(DM.id, 2);
    expect(e2e.llm.requests).toHaveLength(3);
    expect(imagePartsOf(e2e.llm.requests[2]!)).toHaveLength(0);
    expect(e2e.logs.lines.some((line) => line.includes("vision-refused-by-model"))).toBe(true);
  });

  it("LLM_VISION=off sends placeholders only", async () => {
    const e2e = await startE2e({ env: { LLM_VISION: "off" } });
    e2e.telegram.pushMessage({ chat: DM, from: ADA, caption: "look", ...(await photo(e2e)) });
    await e2e.waitForSent(DM.id, 1);
    expect(e2e.llm.requests).toHaveLength(1);
    expect(imagePartsOf(e2e.llm.requests[0]!)).toHaveLength(0);
    expect(lastUserText(e2e.llm.requests[0]!)).toMatch(/^\[photo .*\]\nlook$/);
  });

  it("a catalogue model marked vision: false never gets image parts; one marked true does (LLM_VISION=auto)", async () => {
    const e2e = await startE2e({
      env: {
        LONGHAUL_CONFIG_FILE: writeConfigFile(`
models:
  default: plain
  list:
    plain: { id: gpt-4o-mini, vision: false }
    seer: { id: gpt-4.1, vision: true }
`),
      },
    });
    // The endpoint takes pictures: only the catalogue's flag keeps them from the text-only model.
    e2e.telegram.pushMessage({ chat: DM, from: ADA, caption: "what is in it?", ...(await photo(e2e)) });
    await e2e.waitForSent(DM.id, 1);
    expect(e2e.llm.requests).toHaveLength(1);
    expect(e2e.llm.requests[0]!.body.model).toBe("gpt-4o-mini");
    expect(imagePartsOf(e2e.llm.requests[0]!)).toHaveLength(0);
    expect(lastUserText(e2e.llm.requests[0]!)).toMatch(/^\[photo photo-.*\]\nwhat is in it\?$/);

    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "/model seer" });
    await e2e.waitForSent(DM.id, 2);
    e2e.telegram.pushMessage({ chat: DM, from: ADA, caption: "and now?", ...(await photo(e2e)) });
    await e2e.waitForSent(DM.id, 3);
    const seen = mainRequests(e2e).at(-1)!;
    expect(seen.body.model).toBe("gpt-4.1");
    // Both pictures as image parts: pictures stay inline until a compaction, and the text-only
    // model never saw the first.
    expect(imagePartsOf(seen)).toHaveLength(2);
  });

  it("an album of 3 photos is one turn with 3 image parts", async () => {
    const e2e = await startE2e();
    const album = "13579246801357";
    e2e.telegram.pushMessage({ chat: DM, from: ADA, media_group_id: album, caption: "which is best?", ...(await photo(e2e)) });
    e2e.telegram.pushMessage({ chat: DM, from: ADA, media_group_id: album, ...(await photo(e2e)) });
    e2e.telegram.pushMessage({ chat: DM, from: ADA, media_group_id: album, ...(await photo(e2e)) });
    await e2e.waitForSent(DM.id, 1);
    await sleep(500);
    expect(e2e.sentTo(DM.id)).toHaveLength(1);
    expect(e2e.llm.requests).toHaveLength(1);
    expect(imagePartsOf(e2e.llm.requests[0]!)).toHaveLength(3);
    expect(lastUserText(e2e.llm.requests[0]!)).toContain("which is best?");
  });

  it("a voice note is transcribed by the transcription endpoint and answered", async () => {
    const e2e = await startE2e();
    e2e.llm.setTranscriber(() => "What is the capital of France?");
    const audio = Buffer.from("OggS fake opus payload");
    e2e.telegram.pushMessage({ chat: DM, from: ADA, ...voice(e2e, audio) });
    const [answer] = await e2e.waitForSent(DM.id, 1);
    expect(e2e.llm.transcriptions).toHaveLength(1);
    expect(e2e.llm.transcriptions[0]).toMatchObject({ model: "whisper-1", contentType: "audio/ogg" });
    expect(e2e.llm.transcriptions[0]?.bytes.equals(audio)).toBe(true);
    expect(lastUserText(e2e.llm.requests[0]!)).toMatch(/^\[voice message voice-.*\.ogg, .*3 s, transcribed: the text below is what was said\]\nWhat is the capital of France\?$/);
    expect(textOf(answer)).toContain("What is the capital of France?");
  });

  it("a transcription is paid from the chat's budget at TRANSCRIBE_PRICE_PER_MINUTE, by the note's length", async () => {
    const e2e = await startE2e({
      env: { TRANSCRIBE_PRICE_PER_MINUTE: "0.6", LONGHAUL_CONFIG_FILE: writeConfigFile("budgets:\n  chat: { daily: { usd: 1 } }\n") },
    });
    e2e.llm.setTranscriber(() => "Remind me what we said about the boat.");
    // The main model costs nothing here (no prices): whatever the budget shows is the transcription.
    e2e.telegram.pushMessage({ chat: DM, from: ADA, ...voice(e2e, Buffer.from("OggS three seconds")) });
    await e2e.waitForSent(DM.id, 1);
    expect(e2e.llm.transcriptions).toHaveLength(1);
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "/usage" });
    const sent = await e2e.waitForSent(DM.id, 2);
    // 3 s at $0.60 a minute.
    expect(textOf(sent[1])).toMatch(/Budget today for this chat: \$0\.0300 of \$1\.00 used, \$0\.9700 left \(3%\)/);
  });

  it("a spoken command works like a typed one", async () => {
    const e2e = await startE2e();
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "remember the word marmalade" });
    await e2e.waitForSent(DM.id, 1);
    e2e.llm.setTranscriber(() => "/new");
    e2e.telegram.pushMessage({ chat: DM, from: ADA, ...voice(e2e, Buffer.from("OggS new please")) });
    const sent = await e2e.waitForSent(DM.id, 2);
    expect(textOf(sent[1])).toMatch(/fresh|new conversation|archived/i);
    expect(e2e.llm.requests).toHaveLength(1);
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "what word?" });
    await e2e.waitForSent(DM.id, 3);
    // The fresh conversation does not carry the old one.
    expect(e2e.llm.requests[1]?.body.messages.map((message) => contentText(message.content)).join("\n")).not.toContain("marmalade");
  });

  it("a 30 MB voice note is refused before download, with one notice, and a failed transcription tells the user once", async () => {
    const e2e = await startE2e();
    e2e.telegram.pushMessage({ chat: DM, from: ADA, ...voice(e2e, Buffer.from("OggS small stand-in"), 30 * 1024 * 1024) });
    const [notice] = await e2e.waitForSent(DM.id, 1);
    expect(textOf(notice)).toMatch(/voice message: it is 30 MB, and I transcribe up to 25 MB/);
    expect(e2e.telegram.callsOf("getFile")).toHaveLength(0);
    expect(e2e.telegram.downloads).toHaveLength(0);
    expect(e2e.llm.transcriptions).toHaveLength(0);
    expect(e2e.llm.requests).toHaveLength(0);

    // No transcriber answer set: the fake answers OpenAI's 400 for unreadable audio.
    e2e.telegram.pushMessage({ chat: DM, from: ADA, ...voice(e2e, Buffer.from("not audio at all")) });
    const sent = await e2e.waitForSent(DM.id, 2);
    expect(textOf(sent[1])).toMatch(/couldn't use your voice message: transcription failed/);
    await sleep(300);
    expect(e2e.sentTo(DM.id)).toHaveLength(2);
    expect(e2e.llm.requests).toHaveLength(0);
  });

  it("a PDF and a .ts file become text for the model", async () => {
    const e2e = await startE2e();
    e2e.telegram.pushMessage({ chat: DM, from: ADA, caption: "summarise", ...document(e2e, "report.pdf", "application/pdf", makePdf(["Quarterly revenue rose 12 percent", "Costs fell in March"])) });
    await e2e.waitForSent(DM.id, 1);
    const pdfText = lastUserText(e2e.llm.requests[0]!);
    expect(pdfText).toMatch(/\[file report\.pdf, .*its text:\]\nQuarterly revenue rose 12 percent\s+Costs fell in March\n\[end of report\.pdf\]\nsummarise$/);

    const code = "export const answer = (n: number): number => n * 2; // 😀 naïve\n";
    e2e.telegram.pushMessage({ chat: DM, from: ADA, ...document(e2e, "double.ts", "video/mp2t", Buffer.from(code)) });
    await e2e.waitForSent(DM.id, 2);
    expect(lastUserText(e2e.llm.requests[1]!)).toBe(`[file double.ts, ${Buffer.byteLength(code)} B, its text:]\n${code.trim()}\n[end of double.ts]`);
  });

  it("an unsupported file gets one notice and no model call", async () => {
    const e2e = await startE2e();
    e2e.telegram.pushMessage({ chat: DM, from: ADA, ...document(e2e, "contract.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Buffer.from("PK\u0003\u0004 zip")) });
    const [notice] = await e2e.waitForSent(DM.id, 1);
    expect(textOf(notice)).toMatch(/couldn't use your contract\.docx: I can't open this type of file/);
    await sleep(300);
    expect(e2e.sentTo(DM.id)).toHaveLength(1);
    expect(e2e.llm.requests).toHaveLength(0);
    expect(e2e.telegram.downloads).toHaveLength(0);
  });

  it("after compaction no image part remains in the live context, and the summary carries what the model said it showed", async () => {
    const e2e = await startE2e({ env: { PROTECT_LAST_N: "2" } });
    const { llm, telegram } = e2e;
    llm.setHandler((request) => (imagePartsOf(request).length > 0 ? "The picture shows a red square on white." : `echo: ${lastUserText(request)}`));
    telegram.pushMessage({ chat: DM, from: ADA, caption: "what is this?", ...(await photo(e2e)) });
    await e2e.waitForSent(DM.id, 1);
    const shapes = ["squares", "circles", "triangles", "hexagons", "stars", "spirals"];
    for (const [index, shape] of shapes.entries()) {
      telegram.pushMessage({ chat: DM, from: ADA, text: `tell me about ${shape}: ${"lots of geometry talk ".repeat(60)}` });
      await e2e.waitForSent(DM.id, index + 2);
    }
    // Until compaction the picture is re-sent with every request (the model may be asked about it again).
    expect(imagePartsOf(llm.requests[llm.requests.length - 1]!)).toHaveLength(1);
    telegram.pushMessage({ chat: DM, from: ADA, text: "/compress" });
    const afterCompress = await e2e.waitForSent(DM.id, shapes.length + 2);
    expect(textOf(afterCompress.at(-1))).toMatch(/^Compacted/);
    const summarizerRequest = llm.requests.find((request) => /summar/i.test(JSON.stringify(request.body.messages)) && imagePartsOf(request).length === 0 && request.body.messages.some((message) => contentText(message.content).includes("red square")));
    expect(summarizerRequest).toBeDefined();
    expect(imagePartsOf(summarizerRequest!)).toHaveLength(0);

    telegram.pushMessage({ chat: DM, from: ADA, text: "what did the picture show?" });
    await e2e.waitForSent(DM.id, shapes.length + 3);
    const last = mainRequests(e2e).at(-1)!;
    expect(imagePartsOf(last)).toHaveLength(0);
    expect(last.body.messages.map((message) => contentText(message.content)).join("\n")).toContain("red square");
  });
});
