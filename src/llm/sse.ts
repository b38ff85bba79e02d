/**
 * An incremental reader of server-sent events (the WHATWG "event stream" format) as chat
 * completion servers stream them: bytes in, in whatever pieces the network delivers, the `data`
 * of each complete event out. A piece may end inside a UTF-8 sequence, inside a line, or between
 * the CR and LF of a CRLF; lines may end in CRLF, LF or CR; `:` lines are comments (keep-alives);
 * `event:`, `id:` and `retry:` are read and not used (chat completions carry everything in
 * `data`). Several `data:` lines of one event are joined with "\n", as the format says.
 */
export class SseDecoder {
  private readonly decoder = new TextDecoder();
  /** The start of a line whose end has not arrived yet. */
  private partial = "";
  /** The data of the event being read; undefined until its first `data:` line. */
  private data: string | undefined;
  /** The last piece ended in CR: an LF at the start of the next one belongs to it. */
  private afterCarriageReturn = false;

  /** The data of every event completed by these bytes. */
  push(bytes: Uint8Array): string[] {
    return this.read(this.decoder.decode(bytes, { stream: true }));
  }

  /** The end of the stream: a last event without its blank line still counts. */
  end(): string[] {
    const events = this.read(this.decoder.decode());
    if (this.partial !== "") this.line(this.partial, events);
    this.partial = "";
    if (this.data !== undefined) events.push(this.data);
    this.data = undefined;
    return events;
  }

  private read(text: string): string[] {
    const events: string[] = [];
    let start = 0;
    if (this.afterCarriageReturn && text.charCodeAt(0) === 10) start = 1;
    if (text !== "") this.afterCarriageReturn = false;
    for (let index = start; index < text.length; index++) {
      const code = text.charCodeAt(index);
      if (code !== 10 && code !== 13) continue;
      const line = this.partial === "" ? text.slice(start, index) : this.partial + text.slice(start, index);
      this.partial = "";
      this.line(line, events);
      if (code === 13) {
        if (index + 1 === text.length) this.afterCarriageReturn = true;
        else if (text.charCodeAt(index + 1) === 10) index++;
      }
      start = index + 1;
    }
    if (start < text.length) this.partial += text.slice(start);
    return events;
  }

  private line(line: string, events: string[]): void {
    if (line === "") {
      if (this.data !== undefined) events.push(this.data);
      this.data = undefined;
      return;
    }
    const colon = line.indexOf(":");
    if (colon === 0) return; // a comment
    if ((colon === -1 ? line : line.slice(0, colon)) !== "data") return;
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    this.data = this.data === undefined ? value : `${this.data}\n${value}`;
  }
}
