import { describe, expect, it } from "vitest";
import { userMessageText } from "../../../src/agent/index.js";
import type { InboundMessage } from "../../../src/core/channel.js";

const base: InboundMessage = {
  platform: "telegram", sessionKey: "tg:-100", messageId: "5", chatId: "-100", userId: "42", userName: "Alice",
  chatType: "private", text: "is this right?", sentAt: 0,
};

describe("the model's view of an inbound message", () => {
  it("is the text alone in a DM, and names the speaker in a group", () => {
    expect(userMessageText(base)).toBe("is this right?");
    expect(userMessageText({ ...base, chatType: "group" })).toBe("Alice: is this right?");
  });

  it("quotes the message it replies to, with its author, before the user's words", () => {
    const text = userMessageText({ ...base, chatType: "group", replyTo: { author: "Bob", text: "The port is 8080\nand the host is db1" } });
    expect(text).toBe("Alice: [in reply to Bob:]\n> The port is 8080\n> and the host is db1\nis this right?");
  });

  it("shows only the quoted part when the user selected one", () => {
    const text = userMessageText({ ...base, replyTo: { author: "Bob", text: "long text with the port 8080 in it", quote: "port 8080" } });
    expect(text).toBe("[in reply to Bob (quoting part of it):]\n> port 8080\nis this right?");
  });

  it("marks forwarded messages with their origin", () => {
    expect(userMessageText({ ...base, forwardedFrom: "Carol" })).toBe("[forwarded from Carol]\nis this right?");
  });
});
