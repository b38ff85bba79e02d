import type { InboundMessage } from "../channel-adapter.js";

/** The console is one private chat with the operator, whose session is `console:<name>`. */
export function toInboundMessage(input: { text: string; messageId: string; userName: string; now: number }): InboundMessage {
  return {
    platform: "console",
    sessionKey: `console:${input.userName}`,
    messageId: input.messageId,
    chatId: input.userName,
    userId: input.userName,
    userName: input.userName,
    chatType: "private",
    text: input.text,
    sentAt: input.now,
  };
}
