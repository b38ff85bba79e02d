/**
 * `/export` on Discord (issue #16 item 6): the real discord.js adapter uploads the files with
 * message create (multipart: payload_json + files[n]) to the fake Discord, which parses the
 * upload itself and enforces Discord's limits; the test reads the files back from the fake.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FAKE_TOKEN, FakeDiscord } from "../fakes/fake-discord.js";
import { memoryModel } from "../helpers/memory.js";
import { DiscordE2E, closeExpectingOnlyAskerPinged, IDS, fixture, mention, sleep, until } from "../helpers/discord-pipeline.js";
import type { UserExport } from "../../src/memory/index.js";

const FACT = "my cat is called Turing";

describe("discord /export", { timeout: 120_000 }, () => {
  let e2e: DiscordE2E | undefined;
  afterEach(async () => {
    await closeExpectingOnlyAskerPinged(e2e);
    e2e = undefined;
  });

  it("in a DM: the text, then a Markdown and a JSON file holding every message and the memory, each uploaded once", async () => {
    e2e = await DiscordE2E.start();
    e2e.llm.setHandler(memoryModel);
    await e2e.startPipeline();
    const said = ["hello there", `remember: ${FACT}`, "the weather is fine today"];
    for (const [index, content] of said.entries()) {
      e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content }));
      await e2e.waitForSent(index + 1, IDS.dmChannel);
    }
    const answers = e2e.sent(IDS.dmChannel).map((body) => String(body.content));
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "/export" }));
    await until(() => expect(e2e!.fake.uploads).toHaveLength(2));
    expect(String(e2e.sent(IDS.dmChannel).find((body) => String(body.content).startsWith("Your export:"))?.content)).toMatch(/and 1 remembered fact/);

    const [markdown, json] = e2e.fake.uploads;
    expect(markdown!.channelId).toBe(IDS.dmChannel);
    expect(markdown!.filename).toMatch(new RegExp(`^longhaul-export-discord-${IDS.user}-\\d{4}-\\d{2}-\\d{2}\\.md$`));
    expect(markdown!.attachment).toMatchObject({ filename: markdown!.filename, size: markdown!.bytes.length });
    const md = markdown!.bytes.toString("utf8");
    for (const text of [...said, ...answers]) expect(md).toContain(text);
    expect(md).toContain(`- [u1] ${FACT}`);
    const data = JSON.parse(json!.bytes.toString("utf8")) as UserExport;
    expect(data.memory.facts.map((fact) => fact.text)).toEqual([FACT]);
    const transcript = data.sessions.flatMap((session) => session.transcript);
    for (const text of answers) expect(transcript.some((message) => message.role === "assistant" && message.content === text)).toBe(true);
    await sleep(500);
    expect(e2e.fake.uploads).toHaveLength(2);
  });

  it("in a server channel: refused, pointing to the DM, and no file is uploaded", async () => {
    e2e = await DiscordE2E.start();
    await e2e.startPipeline();
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000901", "/export"));
    const [refusal] = await e2e.waitForSent(1, IDS.textChannel);
    expect(String(refusal!.content)).toMatch(/only send it in a private chat/);
    await sleep(300);
    expect(e2e.fake.uploads).toHaveLength(0);
  });
});

describe("the fake Discord's upload rules", () => {
  it("refuses a file without a name, an empty one and one over 10 MiB; accepts a file with no text", async () => {
    const fake = await FakeDiscord.start();
    try {
      const upload = async (file: Blob, filename: string) => {
        const form = new FormData();
        form.set("payload_json", JSON.stringify({ attachments: [{ id: "0", filename }] }));
        if (filename === "") form.set("files[0]", new Blob([await file.arrayBuffer()]), "");
        else form.set("files[0]", file, filename);
        const response = await fetch(`${fake.apiRoot}/v10/channels/${IDS.dmChannel}/messages`, { method: "POST", body: form, headers: { authorization: `Bot ${FAKE_TOKEN}` } });
        return { status: response.status, body: (await response.json()) as { message?: string; attachments?: Array<{ filename: string }> } };
      };
      const ok = await upload(new Blob(["hello"]), "a.md");
      expect(ok.status).toBe(200);
      expect(ok.body.attachments?.map((attachment) => attachment.filename)).toEqual(["a.md"]);
      // undici leaves an empty filename out: the part is a plain field, not a file.
      expect((await upload(new Blob(["hello"]), "")).status).toBe(400);
      expect((await upload(new Blob([]), "empty.md")).status).toBe(400);
      expect((await upload(new Blob([Buffer.alloc(10 * 1024 * 1024 + 1)]), "big.bin")).status).toBe(413);
      expect(fake.uploads.map((file) => file.bytes.toString())).toEqual(["hello"]);
    } finally {
      await fake.close();
    }
  });
});
