/**
 * Every secret the configuration holds stays out of the logs (issue 29): an end-to-end run with
 * the production logger (masking the list configSecrets builds from the whole configuration),
 * trace level, in which the secrets are used and provoked into errors — a catalogue model's
 * literal key echoed back by the provider's 401, the transcription key echoed back the same
 * way, MCP servers that cannot connect with a bearer header and a token in their environment, a
 * password in an endpoint URL — and then every line is scanned for each secret as this test
 * writes it down itself (not as the code under test lists them).
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { httpError } from "../fakes/fake-llm.js";
import { writeConfigFile } from "../helpers/config-file.js";
import { ADA, DM, SECRETS, startTelegramE2e, textOf, waitUntil, warmUpTokenizer, type TelegramE2e } from "../helpers/telegram-pipeline.js";

const CATALOGUE_KEY = "cat-LITERAL-key-4567890";
const TRANSCRIBE_KEY = "tr-TRANSCRIBE-key-2223334";
const MCP_BEARER = "mcp-BEARER-token-7890123";
const MCP_HEADER = "team-HEADER-value-3213213";
const MCP_ENV = "ghp-ENV-token-6546546";
const URL_PASSWORD = "proxy-PASS-word-5556667";

let e2e: TelegramE2e | undefined;
beforeAll(() => warmUpTokenizer());
afterEach(async () => {
  await e2e?.close();
  e2e = undefined;
});

describe("configured secrets never reach a log line", () => {
  it("scans a whole run's log output for every secret of the configuration", async () => {
    e2e = await startTelegramE2e({
      maskLogs: true,
      env: (llmUrl) => ({
        TRANSCRIBE_API_KEY: TRANSCRIBE_KEY,
        TRANSCRIBE_BASE_URL: llmUrl,
        LONGHAUL_CONFIG_FILE: writeConfigFile([
          "models:",
          "  default: big",
          "  list:",
          `    big: { id: gpt-4o-mini, endpoint: "${llmUrl}", api_key: "${CATALOGUE_KEY}" }`,
          `    spare: { id: other, endpoint: "https://proxy:${URL_PASSWORD}@llm.invalid/v1" }`,
          "mcp:",
          "  servers:",
          `    search: { url: "http://127.0.0.1:9/mcp", headers: { Authorization: "Bearer ${MCP_BEARER}", X-Team: "${MCP_HEADER}" }, connect_timeout_ms: 2000 }`,
          `    files: { command: "${process.execPath}", args: ["-e", "process.exit(3)"], env: { GITHUB_TOKEN: "${MCP_ENV}" }, connect_timeout_ms: 2000 }`,
          "",
        ].join("\n")),
      }),
    });
    const run = e2e;
    // The provider refuses the catalogue key and quotes it whole (some do).
    run.llm.enqueue(httpError.unauthorized(`Incorrect API key provided: ${CATALOGUE_KEY}.`));
    run.telegram.pushMessage({ chat: DM, from: ADA, text: "hello there" });
    await run.waitForSent(DM.id, 1);
    // The transcription endpoint does the same with its key.
    run.llm.setTranscriber(() => httpError.unauthorized(`Incorrect API key provided: ${TRANSCRIBE_KEY}.`));
    run.telegram.addFile("AwACvoice-secret", Buffer.from("OggS a voice note"), "voice/AwACvoice-secret.oga");
    run.telegram.pushMessage({ chat: DM, from: ADA, voice: { file_id: "AwACvoice-secret", file_unique_id: "u-secret", duration: 2, mime_type: "audio/ogg", file_size: 17 } });
    const sent = await run.waitForSent(DM.id, 2);
    expect(textOf(sent[1])).toMatch(/transcription failed/);
    const logs = () => run.logs.lines.join("");
    await waitUntil(() => logs().includes("media-transcription-failed") && logs().includes("mcp-connect-failed"), "the failures to be logged");
    await run.close();

    const all = logs();
    // The failures were logged, with what the operator needs and none of the secrets.
    expect(all).toMatch(/"err":"HTTP 401: invalid_api_key"/);
    for (const secret of [...SECRETS, CATALOGUE_KEY, TRANSCRIBE_KEY, MCP_BEARER, MCP_HEADER, MCP_ENV, URL_PASSWORD]) expect(all, secret).not.toContain(secret);
  });
});
