import type { ToolDefinition } from "../../core/messages.js";

/** What a tool may use while it runs: only the current session's data, never another's. */
export interface ToolContext {
  sessionKey: string;
  signal: AbortSignal;
  /** Reads the current session's transcript (for `recall`). */
  transcript: TranscriptReader;
  now(): number;
}

export interface TranscriptReader {
  get(id: string): Promise<import("../../core/messages.js").ChatMessage | undefined>;
  /**
   * Messages holding every word of `query`, newest first, from a bounded page of the transcript
   * (older than position `before` when given); `continueBefore` says where an older page starts.
   * Throws once this turn's search budget is spent.
   */
  search(query: string, limit: number, before?: number): Promise<{
    messages: Array<import("../../core/messages.js").ChatMessage>;
    scanned: number;
    continueBefore: number | undefined;
  }>;
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
