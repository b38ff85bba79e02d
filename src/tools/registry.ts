import type { MessageOrigin } from "../core/channel.js";
import type { ChatMessage, ToolDefinition } from "../core/messages.js";
import type { ToolOutput } from "../core/tools.js";

/** What a tool may use while it runs: only the current session's data, never another's. */
export interface ToolContext {
  sessionKey: string;
  signal: AbortSignal;
  /** Reads the current session's transcript (for `recall`). */
  transcript: TranscriptReader;
  /** Reads the full originals of capped tool outputs (for `recall`). */
  outputs: ToolOutputReader;
  now(): number;
  /** The message this turn answers (the latest of its batch): who asks, in which chat. */
  origin?: MessageOrigin;
  /** The chat's time zone (the session's own, else TZ). */
  timeZone?: string;
  /**
   * The version this turn will commit. A tool whose effect lands outside the commit (a
   * reminder created) keys it by this, the tool and its arguments, so a re-run of the same turn
   * (a retry after a later step failed, a worker that died past its lease) finds its own
   * earlier effect instead of repeating it.
   */
  turnVersion?: number;
  /**
   * Runs a sub-task as a child agent turn and returns its result (the `delegate` tool); set by
   * the turn for its own calls only, so a child cannot delegate again.
   */
  delegate?: (request: DelegateRequest) => Promise<string>;
}

/** What a turn asks of one child agent (the `delegate` tool, builtin/delegate.ts). */
export interface DelegateRequest {
  task: string;
  /** The facts the child needs: it sees nothing else of the conversation. */
  context?: string;
  /** Names of the parent's tools the child may use; absent: all of them (but `delegate`). */
  tools?: string[];
}

export interface TranscriptReader {
  get(id: string): Promise<ChatMessage | undefined>;
  /**
   * Messages holding every word of `query`, newest first, from a bounded page of the transcript
   * (older than position `before` when given); `continueBefore` says where an older page starts.
   * Throws once this turn's search budget is spent.
   */
  search(query: string, limit: number, before?: number): Promise<{ messages: ChatMessage[]; scanned: number; continueBefore: number | undefined }>;
}

/** One page of a stored tool output; `undefined` when no output is stored under that id. */
export interface ToolOutputReader {
  read(id: string, offset: number, length: number): Promise<{ text: string; total: number } | undefined>;
}

export interface Tool {
  definition: ToolDefinition;
  /** Returns what the model sees. Throwing is fine: the loop turns it into an error result. */
  run(args: Record<string, unknown>, context: ToolContext): Promise<string | ToolOutput>;
  /**
   * A person must approve a call before it runs: every call (`true`, the MCP `approval`
   * setting), or the calls a sensitive built-in names (a function of the call's arguments,
   * e.g. `schedule` creating a recurring agent task).
   */
  needsApproval?: boolean | ((args: Record<string, unknown>) => boolean);
  /** Longest output the model sees from this tool; unset: the turn's cap. */
  maxOutputChars?: number;
  /** The MCP server and tool behind it, for /tools and approval requests. */
  origin?: { server: string; tool: string };
}

/**
 * Whether this call waits for a person's approval. Arguments that do not parse ask for none:
 * the call then runs only to return its parse error.
 */
export function callNeedsApproval(tool: Tool | undefined, rawArguments: string): boolean {
  const rule = tool?.needsApproval;
  if (typeof rule !== "function") return rule === true;
  let args: unknown;
  try {
    args = rawArguments.trim() === "" ? {} : JSON.parse(rawArguments);
  } catch {
    return false;
  }
  return typeof args === "object" && args !== null && !Array.isArray(args) && rule(args as Record<string, unknown>);
}

/**
 * The tools a turn may use while another call waits for approval (one waits at a time): a tool
 * that always asks is left out; one that asks for some calls refuses those calls.
 */
export function withoutApprovals(tools: readonly Tool[]): Tool[] {
  return tools.flatMap((tool): Tool[] => {
    const rule = tool.needsApproval;
    if (rule === true) return [];
    if (typeof rule !== "function") return [tool];
    const { needsApproval: _asks, ...rest } = tool;
    void _asks;
    return [{
      ...rest,
      run: async (args, context) => {
        if (rule(args)) throw new Error("this call needs a person's approval, and another request is already waiting for one; ask again after it is answered");
        return tool.run(args, context);
      },
    }];
  });
}

/** The tools of one turn, as the loop sees them. */
export interface ToolSet {
  get(name: string): Tool | undefined;
  /** Sorted by name, so the request prefix stays byte-stable for prompt caching. */
  definitions(): ToolDefinition[];
}

/**
 * A set of tools by name. Definitions are sorted by code unit (not by locale, which may differ
 * between machines), so the request prefix stays byte-stable for prompt caching.
 */
export class ToolRegistry implements ToolSet {
  readonly #tools = new Map<string, Tool>();

  constructor(tools: Iterable<Tool> = []) {
    for (const tool of tools) this.register(tool);
  }

  register(tool: Tool): this {
    this.#tools.set(tool.definition.function.name, tool);
    return this;
  }

  get(name: string): Tool | undefined {
    return this.#tools.get(name);
  }

  list(): Tool[] {
    return [...this.#tools.values()].sort((a, b) => compareNames(a.definition.function.name, b.definition.function.name));
  }

  definitions(): ToolDefinition[] {
    return this.list().map((tool) => tool.definition);
  }
}

const compareNames = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
