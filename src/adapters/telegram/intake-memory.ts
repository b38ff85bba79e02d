/**
 * What the adapter remembers about recent updates, in memory and bounded: the first item of each
 * album (one notice per album, not one per photo), and the last long message of each sender
 * (a group paste continues where its addressed first part left off). A webhook deployment with
 * several replicas may split a chat's updates across them; a replica that did not see the first
 * part then treats a continuation as an unaddressed group message (docs/telegram.md).
 */
import type { Message } from "grammy/types";

/** Telegram clients send the parts of a split paste back to back; dates have 1 s resolution. */
const PASTE_GAP_SECONDS = 2;

class BoundedMap<V> {
  private readonly entries = new Map<string, V>();
  constructor(private readonly capacity: number) {}
  get(key: string): V | undefined {
    return this.entries.get(key);
  }
  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }
}

export class IntakeMemory {
  private readonly albums = new BoundedMap<true>(1_000);
  private readonly pastes = new BoundedMap<{ messageId: number; date: number }>(1_000);
  private readonly takenAlbums = new BoundedMap<true>(1_000);
  /** Groups where another bot showed itself (a bare command there is not taken as ours). */
  private readonly groupsWithOtherBots = new BoundedMap<true>(10_000);

  noteOtherBot(chatId: string): void {
    this.groupsWithOtherBots.set(chatId, true);
  }

  hasOtherBot(chatId: string): boolean {
    return this.groupsWithOtherBots.get(chatId) === true;
  }

  /** Remembers an album one of whose items was taken (addressed the bot): its other items follow it. */
  rememberAlbum(mediaGroupId: string | undefined): void {
    if (mediaGroupId !== undefined) this.takenAlbums.set(mediaGroupId, true);
  }

  continuesAlbum(mediaGroupId: string): boolean {
    return this.takenAlbums.get(mediaGroupId) === true;
  }

  /** True for the first item of an album this process sees (or for a message outside any album). */
  firstOfAlbum(mediaGroupId: string | undefined): boolean {
    if (mediaGroupId === undefined) return true;
    if (this.albums.get(mediaGroupId)) return false;
    this.albums.set(mediaGroupId, true);
    return true;
  }

  /** Remembers a taken message that may be continued by more parts of the same paste. */
  rememberPastePart(message: Pick<Message, "chat" | "from" | "sender_chat" | "message_id" | "date">): void {
    this.pastes.set(senderKey(message), { messageId: message.message_id, date: message.date });
  }

  /** The next message of the same sender, right after a remembered long part. */
  continuesPaste(message: Pick<Message, "chat" | "from" | "sender_chat" | "message_id" | "date">): boolean {
    const previous = this.pastes.get(senderKey(message));
    return previous !== undefined && message.message_id === previous.messageId + 1 && message.date - previous.date <= PASTE_GAP_SECONDS;
  }
}

const senderKey = (message: Pick<Message, "chat" | "from" | "sender_chat">) =>
  `${message.chat.id}:${message.sender_chat?.id ?? message.from?.id ?? "?"}`;
