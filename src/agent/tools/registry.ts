import type { InboundMessage } from "../../core/channel.js";
import type { ToolDefinition } from "../../core/messages.js";

/** What a tool may use while it runs: only the current session's data, never another's. */
export interface ToolContext {
  sessionKey: string;
  signal: AbortSignal;
  /** Reads the current session's transcript (for `recall`). */
  transcript: TranscriptReader;
  now(): number;
  /** The message this turn answers (the latest of its batch): who asks, in which chat. */
  origin?: InboundMessage;
  /** The chat's time zone (the session's own, else TZ). */
  timeZone?: string;
}

export interface TranscriptReader {
  get(id: string): Promise<import("../../core/messages.js").ChatMessage | undefined>;
  search(query: string, limit: number): Promise<Array<import("../../core/messages.js").ChatMessage>>;
}

export interface Tool {
  definition: ToolDefinition;
  /** Returns the text the model sees. Throwing is fine: the loop turns it into an error result. */
  run(args: Record<string, unknown>, context: ToolContext): Promise<string>;
}

/**
 * The tools offered to the model. Open for later additions (MCP servers register here);
 * definitions are sorted by name so the request prefix stays byte-stable for prompt caching.
 */
export class ToolRegistry {
  readonly #tools = new Map<string, Tool>();

  register(tool: Tool): this {
    this.#tools.set(tool.definition.function.name, tool);
    return this;
  }

  get(name: string): Tool | undefined {
    return this.#tools.get(name);
  }

  definitions(): ToolDefinition[] {
    return [...this.#tools.values()]
      .map((tool) => tool.definition)
      .sort((a, b) => a.function.name.localeCompare(b.function.name));
  }
}
