/**
 * Long-term memory bound to conversations: whose memory a session reads, the snapshot it
 * carries, the tool's writes, `/memory`, `/pin`, and the privacy rules between them.
 */
import type { MessageOrigin } from "../core/channel.js";
import type { MemoryOwner, Pin, SessionMemory } from "../core/memory.js";
import type { CallBudget } from "../core/llm.js";
import type { SessionState } from "../session/state.js";
import { SUMMARY_END_MARKER, SUMMARY_HEADER } from "../context/index.js";
import type { Summarizer } from "../context/summarizer.js";
import type { Logger } from "../logger.js";
import { ownerOf, parseUserRef, sameOwner, userRef } from "./owner.js";
import { renderSnapshot, type SnapshotParts } from "./snapshot.js";
import {
  addFact, charCount, copiesFact, matcher, removeFacts, replaceFact, usedChars, type MemoryDoc, type MemoryFact, type MemoryStore, type WriteResult,
} from "./store.js";

export interface MemorySettings {
  /** MEMORY_USER_MAX_CHARS */
  userMaxChars: number;
  /** MEMORY_CHAT_MAX_CHARS */
  chatMaxChars: number;
  /** MEMORY_PINS_MAX_CHARS: all pins of a conversation together. */
  pinsMaxChars: number;
}

/** The re-summarization `/forget` asks for. */
export const FORGET_PROMPT = "You edit a conversation summary. The user asked to forget everything about the text in <forget>. Output the summary in <summary> with every mention of it, and every fact that depends on it, removed; keep everything else exactly as written, with the same headings. Output only the summary.";

export const memoryOf = (state: SessionState): SessionMemory => (state.memory ??= {});

const scopeName = (owner: MemoryOwner) => (owner.scope === "user" ? "your user memory" : "this chat's memory");

export class MemoryService {
  readonly store: MemoryStore;
  readonly settings: MemorySettings;
  readonly #now: () => number;

  readonly #summarizer: Summarizer | undefined;

  /** `summarizer`: rewrites the live summary without what `/forget` removes. */
  constructor(store: MemoryStore, settings: MemorySettings, options: { now?: () => number; summarizer?: Summarizer } = {}) {
    this.store = store;
    this.settings = settings;
    this.#now = options.now ?? Date.now;
    this.#summarizer = options.summarizer;
  }

  /**
   * The summary message's content re-summarized without `text` (`/forget`). On failure the
   * content comes back as it was; the caller cuts the text out literally either way.
   */
  async rewriteSummary(content: string, text: string, signal: AbortSignal, log: Logger, budget?: CallBudget): Promise<string> {
    if (!this.#summarizer) return content;
    let body = content.trim();
    const framed = body.startsWith(SUMMARY_HEADER) && body.endsWith(SUMMARY_END_MARKER);
    if (framed) body = body.slice(SUMMARY_HEADER.length, body.length - SUMMARY_END_MARKER.length).trim();
    try {
      const { text: rewritten } = await this.#summarizer.summarize({
        messages: [
          { role: "system", content: FORGET_PROMPT },
          { role: "user", content: `<forget>${text}</forget>\n\n<summary>\n${body}\n</summary>` },
        ],
        maxTokens: Math.max(256, Math.ceil(charCount(body) / 2)),
        signal,
        ...(budget ? { budget } : {}),
      });
      return framed ? `${SUMMARY_HEADER}\n\n${rewritten.trim()}\n\n${SUMMARY_END_MARKER}` : rewritten.trim();
    } catch (error) {
      if (signal.aborted) throw error;
      log.warn({ err: error }, "forget-summary-rewrite-failed");
      return content;
    }
  }

  capOf(owner: MemoryOwner): number {
    return owner.scope === "user" ? this.settings.userMaxChars : this.settings.chatMaxChars;
  }

  /**
   * Before a chat turn: the conversation's owner (from the message it answers) and, at session
   * start (no snapshot yet: a new session, after /new or a restart), the snapshot.
   */
  async prepareTurn(state: SessionState, origin: Pick<MessageOrigin, "chatType" | "platform" | "userId" | "sessionKey">): Promise<void> {
    const memory = memoryOf(state);
    const owner = ownerOf(origin);
    const changed = !memory.owner || !sameOwner(memory.owner, owner);
    memory.owner = owner;
    if (changed || memory.snapshot === undefined) await this.refreshSnapshot(state);
  }

  /** Retakes the snapshot (session start, after a compaction, after /forget). */
  async refreshSnapshot(state: SessionState): Promise<void> {
    const memory = memoryOf(state);
    if (!memory.owner) return;
    memory.snapshot = renderSnapshot(await this.snapshotParts(memory.owner));
  }

  async snapshotParts(owner: MemoryOwner): Promise<SnapshotParts> {
    if (owner.scope === "user") {
      const doc = await this.store.read(owner);
      return { user: { ...(doc.name ? { name: doc.name } : {}), doc } };
    }
    const chat = await this.store.read(owner);
    const shared: NonNullable<SnapshotParts["shared"]> = [];
    for (const ref of chat.sharedBy ?? []) {
      const user = parseUserRef(ref);
      if (!user) continue;
      const doc = await this.store.read({ scope: "user", ...user });
      // Consent is checked on both sides: the user's own list must still name this chat.
      if (doc.sharedWith?.includes(owner.sessionKey)) shared.push({ name: doc.name ?? ref, doc });
    }
    return { chat, shared };
  }

  // ---- the memory tool's writes ---------------------------------------------------------

  async add(owner: MemoryOwner, text: string, speaker?: string): Promise<WriteResult> {
    const refused = await this.#copyRefusal(owner, text);
    if (refused) return refused;
    const prefix = owner.scope === "user" ? "u" : "c";
    return this.store.update(owner, (doc) => named(addFact(doc, prefix, text, { maxChars: this.capOf(owner) }, this.#now()), owner, speaker));
  }

  async replace(owner: MemoryOwner, id: string, text: string, speaker?: string): Promise<WriteResult> {
    const refused = await this.#copyRefusal(owner, text);
    if (refused) return refused;
    return this.store.update(owner, (doc) => named(replaceFact(doc, id, text, { maxChars: this.capOf(owner) }, this.#now()), owner, speaker));
  }

  /**
   * A fact a member shared with a group stays theirs (issue 29): the model may not copy it into
   * the group's own memory, where it would outlive their `/memory unshare` or `forget`.
   */
  async #copyRefusal(owner: MemoryOwner, text: string): Promise<WriteResult | undefined> {
    if (owner.scope !== "chat") return undefined;
    const { chat, shared = [] } = await this.snapshotParts(owner);
    for (const member of shared) {
      if (member.doc.facts.some((fact) => copiesFact(text, fact.text))) {
        return { ok: false, reason: `that is ${member.name}'s own memory, shared with this chat while they allow it; it is not copied into the chat's memory (it leaves with their /memory unshare)`, doc: chat ?? { facts: [], nextId: 1 } };
      }
    }
    return undefined;
  }

  /** Removes from a chat's memory every fact that copies one of `facts` (a share withdrawn, a shared fact forgotten). */
  async #dropCopies(sessionKey: string, facts: readonly MemoryFact[]): Promise<MemoryFact[]> {
    if (facts.length === 0) return [];
    const result = await this.store.update({ scope: "chat", sessionKey }, (doc) => removeFacts(doc, (fact) => facts.some((shared) => copiesFact(fact.text, shared.text))));
    return result.ok ? (result.removed ?? []) : [];
  }

  /** Removes facts by id, or else every fact containing the text. */
  async remove(owner: MemoryOwner, idOrText: string): Promise<MemoryFact[]> {
    const result = await this.store.update(owner, (doc) => {
      const byId = doc.facts.some((fact) => fact.id === idOrText.trim());
      return removeFacts(doc, byId ? (fact) => fact.id === idOrText.trim() : matcher(idOrText));
    });
    return result.ok ? (result.removed ?? []) : [];
  }

  usage(owner: MemoryOwner, doc: MemoryDoc): string {
    return `${usedChars(doc).toLocaleString("en-US")}/${this.capOf(owner).toLocaleString("en-US")} characters`;
  }

  // ---- /memory ----------------------------------------------------------------------------

  /** `/memory`, `/memory forget <id|text>`, `/memory share`, `/memory unshare`. */
  async command(state: SessionState, origin: MessageOrigin, args: string): Promise<string> {
    const owner = ownerOf(origin);
    memoryOf(state).owner = owner;
    const [verb = "", ...rest] = args.trim().split(/\s+/);
    const argument = args.trim().slice(verb.length).trim();
    switch (verb.toLowerCase()) {
      case "":
        return this.describe(owner);
      case "forget": {
        if (argument === "") return "Usage: /memory forget <id or text>";
        const removed = await this.remove(owner, argument);
        if (removed.length === 0) return `Nothing in ${scopeName(owner)} matches "${argument}".`;
        // Gone from every snapshot at once: this conversation's, and each group's the memory is shared with.
        await this.refreshSnapshot(state);
        // A copy of it the group's memory holds (written before copies were refused) goes too.
        if (owner.scope === "user") {
          for (const sessionKey of (await this.store.read(owner)).sharedWith ?? []) {
            await this.#dropCopies(sessionKey, removed);
            await this.store.dropSnapshot(sessionKey);
          }
        }
        return `Removed from ${scopeName(owner)}:\n${removed.map((fact) => `• [${fact.id}] ${fact.text}`).join("\n")}\nIt has left my memory here${owner.scope === "user" ? " and in the groups you share it with" : ""}; /forget removes it from the current conversation's messages too.`;
      }
      case "share":
      case "unshare": {
        const answer = await this.share(origin, verb.toLowerCase() === "share");
        // Consent takes effect at once: this chat's snapshot is retaken now.
        if (origin.chatType !== "private") await this.refreshSnapshot(state);
        return answer;
      }
      default:
        void rest;
        return "Usage: /memory — show what I remember here · /memory forget <id|text> · /memory share | unshare (in a group: use your own memory here too, or stop)";
    }
  }

  async describe(owner: MemoryOwner): Promise<string> {
    const doc = await this.store.read(owner);
    const title = owner.scope === "user" ? "Your memory (used only in our private chat unless you /memory share it in a group)" : "This chat's memory (used only in this chat)";
    const lines = [`${title} · ${this.usage(owner, doc)}:`];
    if (doc.facts.length === 0) lines.push("(nothing yet — ask me to remember something)");
    for (const fact of doc.facts) lines.push(`• [${fact.id}] ${fact.text}`);
    if (owner.scope === "chat" && (doc.sharedBy?.length ?? 0) > 0) lines.push("", `Also used here: the memory of ${doc.sharedBy!.length} member(s) who shared it.`);
    if (owner.scope === "user" && (doc.sharedWith?.length ?? 0) > 0) lines.push("", `Shared with ${doc.sharedWith!.length} group chat(s).`);
    lines.push("", "/memory forget <id|text> removes a fact.");
    return lines.join("\n");
  }

  /** In a group: allow (or stop) the speaker's own memory in this chat. Both sides record it. */
  async share(origin: MessageOrigin, on: boolean): Promise<string> {
    if (origin.chatType === "private") {
      return "Your memory is used in our private chat only. To use it in a group too, send /memory share in that group; /memory unshare there stops it.";
    }
    const user: MemoryOwner = { scope: "user", platform: origin.platform, userId: origin.userId };
    const chat: MemoryOwner = { scope: "chat", sessionKey: origin.sessionKey };
    const ref = userRef(origin.platform, origin.userId);
    const toggle = (list: string[] | undefined, item: string) => (on ? [...new Set([...(list ?? []), item])] : (list ?? []).filter((entry) => entry !== item));
    const written = await this.store.update(user, (doc) => ({ ok: true, doc: { ...doc, name: origin.userName, sharedWith: toggle(doc.sharedWith, origin.sessionKey) } }));
    await this.store.update(chat, (doc) => ({ ok: true, doc: { ...doc, sharedBy: toggle(doc.sharedBy, ref) } }));
    // The share leaves with every copy of its facts in the chat's own memory.
    if (!on) await this.#dropCopies(origin.sessionKey, written.doc.facts);
    return on
      ? `${origin.userName}, your memory is now used in this chat too, from now on. /memory unshare stops it.`
      : `${origin.userName}, your memory is no longer used in this chat, from now on.`;
  }

  // ---- pins ---------------------------------------------------------------------------------

  /** `/pin <text>`: kept verbatim in every context; the request carries it from the next step. */
  pin(state: SessionState, rawText: string): string {
    const text = rawText.trim();
    if (text === "") return "Usage: /pin <text>, or send /pin as a reply to the message to pin.";
    const memory = memoryOf(state);
    const pins = memory.pins ?? [];
    const used = pins.reduce((sum, pin) => sum + charCount(pin.text), 0);
    if (used + charCount(text) > this.settings.pinsMaxChars) {
      return `Pins are full (${used}/${this.settings.pinsMaxChars} characters; this needs ${charCount(text)}). /unpin <id> one first.`;
    }
    const pin: Pin = { id: `p${memory.nextPin ?? 1}`, text, at: this.#now() };
    memory.pins = [...pins, pin];
    memory.nextPin = (memory.nextPin ?? 1) + 1;
    return `Pinned [${pin.id}]: it stays in my context word for word, through every compaction. /unpin ${pin.id} removes it.`;
  }

  /** `/unpin <id|text>`; `/unpin` alone lists the pins. */
  unpin(state: SessionState, argument: string): string {
    const memory = memoryOf(state);
    const pins = memory.pins ?? [];
    const wanted = argument.trim();
    if (wanted === "") {
      return pins.length === 0 ? "Nothing is pinned." : `Pinned:\n${pins.map((pin) => `• [${pin.id}] ${pin.text}`).join("\n")}\n/unpin <id> removes one.`;
    }
    const byId = pins.some((pin) => pin.id === wanted);
    const gone = pins.filter((pin) => (byId ? pin.id === wanted : pin.text.toLowerCase().includes(wanted.toLowerCase())));
    if (gone.length === 0) return `No pin matches "${wanted}".`;
    memory.pins = pins.filter((pin) => !gone.includes(pin));
    return `Unpinned:\n${gone.map((pin) => `• [${pin.id}] ${pin.text}`).join("\n")}`;
  }
}

/** A user's memory remembers the name to show when they share it with a group. */
function named(result: WriteResult, owner: MemoryOwner, speaker: string | undefined): WriteResult {
  if (!result.ok || owner.scope !== "user" || !speaker || result.doc.name === speaker) return result;
  return { ...result, doc: { ...result.doc, name: speaker } };
}
