/**
 * What the fake Bot API knows about the chats themselves, and refuses as Telegram does:
 * - membership: a bot removed from a chat (kicked from a group, blocked by the user of a private
 *   chat: `removeBot`) is answered 403 "Forbidden: bot was kicked from the supergroup chat" /
 *   "bot was blocked by the user" on every call naming that chat, getChat included;
 * - rights: a bot an admin restricted (`restrictBot`) stays a member, but its sends answer 400
 *   "not enough rights to send text messages to the chat" (documents: "… documents …", voice notes: "… voice notes …");
 * - forum topics: in a forum the fake knows (`openTopic`, or a user's message pushed into one of
 *   its topics), a send into a topic that never existed or was deleted answers "message thread
 *   not found", into a closed one TOPIC_CLOSED — sendMessage, sendDocument, sendVoice and sendChatAction;
 * - several bots: in privacy mode a bare command goes only to the bot that last sent a message to
 *   the group (`botSpoke`, `bareCommandsGoTo`; fake-telegram.ts withholds it from ours otherwise);
 * - reactions: getChat answers `available_reactions` as the chat's admins set it
 *   (`setAvailableReactions`: omitted when all are allowed, empty when none), and
 *   setMessageReaction with an emoji the chat does not allow answers REACTION_INVALID.
 */
import type { ChatFullInfo, Message, ReactionTypeEmoji } from "grammy/types";

/** A Bot API error answer (as fake-telegram.ts answers it). */
export interface ChatRefusal {
  error_code: number;
  description: string;
}

/** Methods that put a message in the chat: refused without the right to send. */
const SENDS: Readonly<Record<string, string>> = { sendMessage: "text messages", sendDocument: "documents", sendVoice: "voice notes", copyMessage: "text messages", forwardMessage: "text messages" };
/** Methods that take `message_thread_id`: refused for a topic that is closed or not there. */
const IN_TOPIC = new Set(["sendMessage", "sendDocument", "sendVoice", "sendChatAction", "copyMessage", "forwardMessage"]);

const kindOf = (chatId: number): "private" | "group" | "supergroup" => (chatId > 0 ? "private" : String(chatId).startsWith("-100") ? "supergroup" : "group");

export class FakeTelegramChats {
  /** Forum topics closed by an admin (`chatId:threadId`): sends into them answer TOPIC_CLOSED. */
  readonly closedTopics = new Set<string>();
  /** Forum topics deleted (`chatId:threadId`): sends into them answer "message thread not found". */
  readonly deletedTopics = new Set<string>();
  /** Topics of the forums the fake knows, by chat id; a forum's topics not listed here do not exist. */
  private readonly forums = new Map<number, Set<number>>();
  /** Chats the bot was removed from (or, for a private chat, blocked in). */
  private readonly removed = new Set<number>();
  /** Chats where the bot may not send. */
  private readonly restricted = new Set<number>();
  /** Reactions a chat allows; absent: all of them. */
  private readonly reactions = new Map<number, readonly string[]>();
  /** The bot that last sent a message to each group (privacy mode's bare commands go to it). */
  private readonly lastBot = new Map<number, number>();

  /** A bot sent a message to the chat (ours through the API; another one: `botSpoke(chat, itsId)`). */
  botSpoke(chatId: number | string, botId: number): void {
    this.lastBot.set(Number(chatId), botId);
  }

  /**
   * Whether a privacy-mode bot gets a bare command (`/new`, no @username) in this group: Telegram
   * gives it only to the bot that last sent a message there ("General commands … if the bot was
   * the last bot to send a message to the group", Bot API FAQ). Before any bot spoke: to it.
   */
  bareCommandsGoTo(chatId: number | string, botId: number): boolean {
    return (this.lastBot.get(Number(chatId)) ?? botId) === botId;
  }

  /** A topic exists in the forum `chatId` (the forum becomes known: its other topics do not exist). */
  openTopic(chatId: number | string, threadId: number): void {
    const topics = this.forums.get(Number(chatId)) ?? new Set<number>();
    topics.add(threadId);
    this.forums.set(Number(chatId), topics);
  }

  /** A user's message pushed into a forum's topic shows the topic exists. */
  saw(message: Message): void {
    if ((message.chat as { is_forum?: boolean } | undefined)?.is_forum && message.is_topic_message && message.message_thread_id !== undefined) this.openTopic(message.chat.id, message.message_thread_id);
  }

  /** An admin removes the bot (a private chat's user blocks it): every later call there is a 403. */
  removeBot(chatId: number | string): void {
    this.removed.add(Number(chatId));
  }

  /** An admin takes the bot's right to send messages; it stays a member. */
  restrictBot(chatId: number | string): void {
    this.restricted.add(Number(chatId));
  }

  /** The reactions the chat's admins allow; `undefined`: all of them (Telegram's default). */
  setAvailableReactions(chatId: number | string, emoji: readonly string[] | undefined): void {
    if (emoji === undefined) this.reactions.delete(Number(chatId));
    else this.reactions.set(Number(chatId), emoji);
  }

  allowsReaction(chatId: number | string, emoji: string): boolean {
    return this.reactions.get(Number(chatId))?.includes(emoji) ?? true;
  }

  /** Why Telegram refuses this call for the chat it names, if it does. */
  refusal(method: string, payload: Record<string, unknown>): ChatRefusal | undefined {
    if (payload.chat_id === undefined) return undefined;
    const chatId = Number(payload.chat_id);
    if (this.removed.has(chatId)) {
      const kind = kindOf(chatId);
      return { error_code: 403, description: kind === "private" ? "Forbidden: bot was blocked by the user" : `Forbidden: bot was kicked from the ${kind} chat` };
    }
    const what = SENDS[method];
    if (what !== undefined && this.restricted.has(chatId)) return { error_code: 400, description: `Bad Request: not enough rights to send ${what} to the chat` };
    if (IN_TOPIC.has(method) && payload.message_thread_id !== undefined) {
      const threadId = Number(payload.message_thread_id);
      const key = `${chatId}:${threadId}`;
      const topics = this.forums.get(chatId);
      if (this.deletedTopics.has(key) || (topics !== undefined && !topics.has(threadId))) return { error_code: 400, description: "Bad Request: message thread not found" };
      if (this.closedTopics.has(key)) return { error_code: 400, description: "Bad Request: TOPIC_CLOSED" };
    }
    return undefined;
  }

  /** getChat's answer for a chat the bot is in. */
  describe(chatId: number): ChatFullInfo {
    const kind = kindOf(chatId);
    const allowed = this.reactions.get(chatId);
    const base = kind === "private" ? { id: chatId, type: kind, first_name: "Ada" } : { id: chatId, type: kind, title: "Group", ...(this.forums.has(chatId) ? { is_forum: true } : {}) };
    return {
      ...base,
      accent_color_id: 0,
      max_reaction_count: 11,
      accepted_gift_types: { unlimited_gifts: false, limited_gifts: false, unique_gifts: false, premium_subscription: false },
      ...(allowed === undefined ? {} : { available_reactions: allowed.map((emoji) => ({ type: "emoji", emoji }) as ReactionTypeEmoji) }),
    } as ChatFullInfo;
  }
}
