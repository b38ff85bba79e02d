import { describe, expect, it } from "vitest";
import { chatRefuses, simplerForms } from "../../../../src/adapters/telegram/fallback.js";

describe("telegram fallback", () => {
  it("tells a chat that refuses every message from a refusal of the text's formatting (issue 30)", () => {
    // Only these end a reply: simpler text cannot help.
    for (const description of [
      "Bad Request: chat not found",
      "Bad Request: CHAT_WRITE_FORBIDDEN",
      "Bad Request: CHAT_SEND_PLAIN_FORBIDDEN",
      "Bad Request: not enough rights to send text messages to the chat",
      "Bad Request: have no rights to send a message",
      "Bad Request: CHAT_ADMIN_REQUIRED",
      "Bad Request: TOPIC_CLOSED",
      "Bad Request: message thread not found",
      "Bad Request: group chat was deactivated",
      "Bad Request: CHANNEL_PRIVATE",
      "Bad Request: USER_BANNED_IN_CHANNEL",
      "Bad Request: PEER_ID_INVALID",
    ]) expect(chatRefuses(description), description).toBe(true);
    // These refuse the text: its simpler forms are sent instead.
    for (const description of [
      "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0",
      "Bad Request: ENTITIES_TOO_LONG",
      "Bad Request: ENTITY_TEXT_INVALID",
      "Bad Request: text must be encoded in UTF-8",
      "Bad Request: message is too long",
    ]) expect(chatRefuses(description), description).toBe(false);
  });

  it("offers the links written out, then plain text with the URLs, then plain text", () => {
    const forms = simplerForms('<b>Done</b>, see <a href="https://e.com/d?a=1&amp;b=2">the docs</a>');
    expect(forms).toEqual([
      { text: "<b>Done</b>, see the docs (https://e.com/d?a=1&amp;b=2)", html: true, form: "unlinked" },
      { text: "Done, see the docs (https://e.com/d?a=1&b=2)", html: false, form: "plain-with-urls" },
      { text: "Done, see the docs", html: false, form: "plain" },
    ]);
    expect(simplerForms("<i>no links</i>")).toEqual([{ text: "no links", html: false, form: "plain" }]);
  });
});
