/**
 * The worker's side of live previews (docs/streaming.md): what the chat should show while a
 * turn runs, published for the gateway to render. `progress` shows one status line ("🔧
 * Running read_file… (step 2)"); `partial` also shows the answer as it streams. Publishing is
 * coalesced here (one update per `intervalMs`, the latest wins) and lossy: a failed publish is
 * forgotten. Nothing is shown before the turn has run for `delayMs` (STREAMING_DELAY_MS): a
 * quicker answer arrives as a message of its own, with no status message edited into it, and
 * the chat's "typing…" covers the wait. Notices (interrupted, retrying …) are shown at once. The
 * final answer never comes from here: it is the committed reply.
 */
import { wellFormed } from "../core/text.js";
import type { PreviewUpdate, ReplyTarget } from "../core/channel.js";

export type PreviewMode = "progress" | "partial";

/** What the tool loop reports while it runs (run-turn.ts). */
export interface StepPreview {
  /** Step `step` is about to call the model. */
  step(step: number): void;
  /** Answer text streamed by the model (set: the step streams). */
  readonly text: ((delta: string) => void) | undefined;
  /** The step called these tools; they run now. */
  tools(names: readonly string[], step: number): void;
}

/** Longest answer text a stopped preview keeps (the platforms cut messages at 2,000–4,096). */
const STOPPED_TEXT_MAX = 1_800;

export const PREVIEW_STATUS = {
  thinking: (step: number) => (step > 1 ? `💭 Thinking… (step ${step})` : "💭 Thinking…"),
  writing: "✍️ Writing the answer…",
  tools: (names: readonly string[], step: number) => `🔧 Running ${[...new Set(names)].join(", ")}… (step ${step})`,
  compacting: "🗜 Summarizing earlier messages…",
  interrupted: "⏹ Interrupted — answering again with your new message…",
  retrying: "⚠️ The model did not answer; trying again…",
  resuming: "⏳ Picking this up again…",
  stopped: "⏹ Stopped.",
} as const;

export class TurnPreview implements StepPreview {
  #current: string | undefined;
  #answer = "";
  #status = "";
  #lastSent = "";
  #lastAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Nothing is published before this time (ms, the `now` clock) except a notice. */
  readonly #showFrom: number;
  readonly text: ((delta: string) => void) | undefined;

  constructor(private readonly options: {
    sessionKey: string;
    target: ReplyTarget;
    mode: PreviewMode;
    publish: (update: PreviewUpdate) => Promise<void>;
    /** Shortest gap between two publishes. @defaultValue 250 */
    intervalMs?: number;
    /** How long after the turn began (this object's creation) the first update may be published. @defaultValue 0 */
    delayMs?: number;
    now?: () => number;
  }) {
    this.text = (delta: string) => this.#delta(delta);
    this.#showFrom = this.#now() + (options.delayMs ?? 0);
  }

  #now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /** The preview id in use (the reply id the answer will have), if a chat segment is streaming. */
  get current(): string | undefined {
    return this.#current;
  }

  /** A chat segment starts; `previewId` is the reply id its answer will get. */
  begin(previewId: string): void {
    this.#current = previewId;
    this.#answer = "";
    this.#show(PREVIEW_STATUS.thinking(1));
  }

  /** The answer took the preview over: later updates of this turn start a new one. */
  consume(): string | undefined {
    const id = this.#current;
    this.flush();
    this.#current = undefined;
    return id;
  }

  step(step: number): void {
    // Only the last step's text is the answer; text before a tool call is replaced.
    this.#answer = "";
    this.#show(PREVIEW_STATUS.thinking(step));
  }

  tools(names: readonly string[], step: number): void {
    this.#show(PREVIEW_STATUS.tools(names, step));
  }

  compacting(): void {
    this.#show(PREVIEW_STATUS.compacting);
  }

  /** A status line shown at once, whatever the mode (interrupted, retrying …). */
  notice(status: string): void {
    this.#show(status, true);
  }

  /** The text a stopped preview keeps: the answer so far (partial mode), marked as stopped. */
  stoppedText(): string {
    const answer = this.options.mode === "partial" ? this.#answer.trim() : "";
    if (answer === "") return PREVIEW_STATUS.stopped;
    const chars = [...answer];
    const kept = chars.length > STOPPED_TEXT_MAX ? `${chars.slice(0, STOPPED_TEXT_MAX).join("")} …` : answer;
    return `${kept}\n\n${PREVIEW_STATUS.stopped}`;
  }

  #delta(delta: string): void {
    if (this.#current === undefined) return;
    this.#answer += delta;
    if (this.options.mode === "progress") this.#show(PREVIEW_STATUS.writing);
    else this.#schedule();
  }

  #show(status: string, now = false): void {
    if (this.#current === undefined) return;
    this.#status = status;
    if (now) this.flush(true);
    else this.#schedule();
  }

  /** What the chat should show now. */
  #view(): string {
    if (this.options.mode === "partial" && this.#answer.trim() !== "") return this.#answer;
    return this.#status;
  }

  #schedule(): void {
    if (this.#closed || this.#timer) return;
    const interval = this.options.intervalMs ?? 250;
    const now = this.#now();
    const wait = Math.max(0, this.#lastAt + interval - now, this.#showFrom - now);
    if (wait === 0) return this.flush();
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.flush();
    }, wait);
  }

  /** Publishes the current view now (if it changed), unless it is too early to show anything and `force` is not set. */
  flush(force = false): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const previewId = this.#current;
    // A stream may cut between the halves of an emoji: the preview shows U+FFFD until the rest comes.
    const text = wellFormed(this.#view());
    if (this.#closed || previewId === undefined || text === "" || text === this.#lastSent) return;
    const now = this.#now();
    if (!force && now < this.#showFrom) return;
    this.#lastSent = text;
    this.#lastAt = now;
    this.options.publish({ sessionKey: this.options.sessionKey, previewId, target: this.options.target, text }).catch(() => undefined);
  }

  /** The turn is over: nothing more is published. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
