import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Attachment } from "../../../src/core/attachments.js";
import { createMediaFetcher } from "../../../src/media/index.js";
import { FakeTelegram } from "../../fakes/fake-telegram.js";

/**
 * A self-hosted Bot API server in --local mode (the fake Bot API's localMode): getFile answers
 * with the file's absolute path on the server's disk, the HTTP file route serves nothing, and
 * files up to 2,000 MB are allowed, so the 20 MB cap of the cloud API must not apply.
 */
describe("Telegram files from a --local Bot API server", () => {
  let fake: FakeTelegram | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await fake?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const attachment = (fileId: string): Attachment => ({ kind: "document", source: { platform: "telegram", fileId }, name: "file.bin", label: "file" });
  const limits = { maxBytes: 100 * 1024 * 1024, timeoutMs: 10_000 };

  it("reads a 25 MB file from the path getFile gives when TELEGRAM_LOCAL_BOT_API is on, and says what to set when it is off", async () => {
    fake = await FakeTelegram.start();
    dir = mkdtempSync(join(tmpdir(), "lh-local-bot-api-"));
    fake.localMode = { dir };
    const content = Buffer.alloc(25 * 1024 * 1024, 7);
    fake.addFile("big", content, "documents/file_1.bin");

    const local = await createMediaFetcher({ telegram: { token: fake.token, apiRoot: fake.apiRoot, local: true } })(attachment("big"), limits);
    expect(local.ok && local.bytes.length).toBe(content.length);
    expect(fake.downloads).toEqual([]);

    const cloud = await createMediaFetcher({ telegram: { token: fake.token, apiRoot: fake.apiRoot } })(attachment("big"), limits);
    expect(cloud).toMatchObject({ ok: false, failure: "too-large" });
    const small = Buffer.from("hello");
    fake.addFile("small", small, "documents/file_2.txt");
    const notSet = await createMediaFetcher({ telegram: { token: fake.token, apiRoot: fake.apiRoot } })(attachment("small"), limits);
    expect(notSet).toMatchObject({ ok: false, failure: "failed", detail: expect.stringContaining("TELEGRAM_LOCAL_BOT_API=on") });
  });

  it("keeps the configured limit and the 2,000 MB ceiling in local mode", async () => {
    fake = await FakeTelegram.start();
    dir = mkdtempSync(join(tmpdir(), "lh-local-bot-api-"));
    fake.localMode = { dir };
    fake.addFile("mid", Buffer.alloc(3 * 1024 * 1024, 1), "documents/file_3.bin");
    const fetched = await createMediaFetcher({ telegram: { token: fake.token, apiRoot: fake.apiRoot, local: true } })(attachment("mid"), { maxBytes: 1024 * 1024, timeoutMs: 10_000 });
    expect(fetched).toMatchObject({ ok: false, failure: "too-large" });
  });
});
