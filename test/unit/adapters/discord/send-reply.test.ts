import { DiscordAPIError, HTTPError } from "discord.js";
import { describe, expect, it } from "vitest";
import { partNonce, toSendError } from "../../../../src/adapters/discord/send-reply.js";
import { PermanentError, RetryableError } from "../../../../src/errors.js";

const apiError = (status: number, code: number, message: string): DiscordAPIError =>
  new DiscordAPIError({ code, message }, code, status, "POST", "https://discord.com/api/v10/channels/1/messages", { body: undefined, files: undefined });

describe("partNonce", () => {
  it("fits Discord's 25 characters, is stable for a part and differs between parts and replies", () => {
    const nonce = partNonce("dc:300000000000000001#17", 0);
    expect(nonce.length).toBeLessThanOrEqual(25);
    expect(partNonce("dc:300000000000000001#17", 0)).toBe(nonce);
    expect(partNonce("dc:300000000000000001#17", 1)).not.toBe(nonce);
    expect(partNonce("dc:300000000000000001#18", 0)).not.toBe(nonce);
  });
});

describe("toSendError", () => {
  it("makes Discord's refusals permanent: missing access, unknown channel, invalid body", () => {
    for (const error of [apiError(403, 50013, "Missing Permissions"), apiError(404, 10003, "Unknown Channel"), apiError(400, 50035, "Invalid Form Body")]) {
      const mapped = toSendError(error, "send part 1/1");
      expect(mapped).toBeInstanceOf(PermanentError);
      expect(mapped.message).toContain(`${error.status}`);
      expect(mapped.cause).toBe(error);
    }
  });

  it("lets server errors and network failures be retried", () => {
    expect(toSendError(apiError(502, 0, "Bad Gateway"), "send")).toBeInstanceOf(RetryableError);
    expect(toSendError(new HTTPError(503, "Service Unavailable", "POST", "https://discord.com/api/v10/x", { body: undefined, files: undefined }), "send")).toBeInstanceOf(RetryableError);
    expect(toSendError(Object.assign(new Error("connect ECONNRESET"), { code: "ECONNRESET" }), "send")).toBeInstanceOf(RetryableError);
  });
});
