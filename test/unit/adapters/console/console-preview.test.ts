import { describe, expect, it } from "vitest";
import { PassThrough } from "node:stream";
import { ConsoleAdapter } from "../../../../src/adapters/console/console-adapter.js";
import type { ConsoleIo } from "../../../../src/adapters/console/console-io.js";
import { PlainConsoleIo } from "../../../../src/adapters/console/console-io.js";
import type { OutboundReply } from "../../../../src/core/channel.js";

/** A terminal-like io that records what the person would see, in order. */
function recordingIo(): ConsoleIo & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    start: () => undefined,
    reply: (text) => void seen.push(`reply:${text}`),
    notice: (text) => void seen.push(`notice:${text}`),
    preview: (text) => void seen.push(`preview:${text}`),
    clearPreview: () => void seen.push("clear"),
    close: () => undefined,
  };
}

const reply: OutboundReply = {
  replyId: "console:you#1#0", sessionKey: "console:you", target: { platform: "console", chatId: "you" },
  text: "the whole answer", inReplyTo: [], kind: "answer", preview: "console:you#1#0",
};

describe("console: live preview in a terminal", () => {
  it("shows the answer as it streams, then clears it and prints the committed reply once", async () => {
    const io = recordingIo();
    const adapter = new ConsoleAdapter({ io, userName: "you" });
    const port = adapter.previews!;
    const signal = new AbortController().signal;
    const id = await port.create(reply.target, "the wh", signal);
    await port.edit(reply.target, id, "the whole ans", signal);
    const parts: Array<[number, boolean]> = [];
    await adapter.send(reply, { fromPart: 0, onPartSent: async (part, { last }) => void parts.push([part, last]), preview: { messageId: id, only: false, onRefused: async () => undefined } });

    expect(io.seen).toEqual(["preview:the wh", "preview:the whole ans", "clear", "reply:the whole answer"]);
    expect(parts).toEqual([[0, true]]);
  });

  it("piped output has no previews: replies are printed as before", () => {
    const adapter = new ConsoleAdapter({ io: new PlainConsoleIo({ input: new PassThrough(), output: new PassThrough(), prompt: "> ", interactive: false }), userName: "you" });
    expect(adapter.previews).toBeUndefined();
  });
});
