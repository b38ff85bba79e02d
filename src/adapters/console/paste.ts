/**
 * Bracketed paste (xterm's mode 2004): once the app asks for it, the terminal wraps pasted text
 * in ESC[200~ … ESC[201~, so a pasted block can be told from typing and sent as one message
 * instead of one message per line. Pure: the terminal module feeds it raw input chunks.
 */

export const ENABLE_BRACKETED_PASTE = "\x1b[?2004h";
export const DISABLE_BRACKETED_PASTE = "\x1b[?2004l";
const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";

export interface InputPart {
  kind: "typed" | "paste";
  text: string;
}

/**
 * Splits terminal input into typed text and whole pastes. A marker cut in two by a chunk
 * boundary (large pastes arrive in several reads) is held until the next chunk completes it.
 */
export class PasteSplitter {
  #inPaste = false;
  #held = "";
  #paste = "";

  push(chunk: string): InputPart[] {
    let text = this.#held + chunk;
    this.#held = "";
    const parts: InputPart[] = [];
    while (text.length > 0) {
      const marker = this.#inPaste ? PASTE_END : PASTE_START;
      const at = text.indexOf(marker);
      if (at === -1) {
        const cut = partialMarkerAt(text, marker);
        this.#held = text.slice(cut);
        this.#take(text.slice(0, cut), parts);
        break;
      }
      this.#take(text.slice(0, at), parts);
      text = text.slice(at + marker.length);
      if (this.#inPaste) {
        parts.push({ kind: "paste", text: this.#paste });
        this.#paste = "";
      }
      this.#inPaste = !this.#inPaste;
    }
    return parts;
  }

  /** Whether a cut marker is held (the caller flushes it after a moment: it may be the Escape key). */
  get holding(): boolean {
    return this.#held !== "" && !this.#inPaste;
  }

  /** Releases held typing: no marker followed, so it was a key (Escape) after all. */
  flush(): InputPart[] {
    if (!this.holding) return [];
    const text = this.#held;
    this.#held = "";
    return [{ kind: "typed", text }];
  }

  #take(text: string, parts: InputPart[]): void {
    if (text === "") return;
    if (this.#inPaste) this.#paste += text;
    else parts.push({ kind: "typed", text });
  }
}

/** Where a proper prefix of `marker` ends `text`, else text.length. */
function partialMarkerAt(text: string, marker: string): number {
  for (let length = Math.min(marker.length - 1, text.length); length >= 1; length--) {
    if (text.endsWith(marker.slice(0, length))) return text.length - length;
  }
  return text.length;
}
