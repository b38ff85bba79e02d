/**
 * One MCP server as a worker process sees it: connected lazily, its tools listed (all pages),
 * reconnected with backoff after it exits or its HTTP session goes stale, disabled for a while
 * when it keeps crashing, and stopped with its whole process tree on shutdown.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerConfig } from "../../../config/tool-sections.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { toToolOutput, type McpCallResult } from "./convert.js";
import { GroupStdioTransport } from "./stdio-transport.js";
import type { ToolOutput } from "../../core/tools.js";

/** Failures (crashes, failed connects) within this window that disable a server... */
const CRASH_WINDOW_MS = 60_000;
const CRASHES_TO_DISABLE = 3;
/** ...for this long; then it is tried again. */
const DISABLE_MS = 5 * 60_000;
/** Reconnect backoff: at once after one failure, then 1 s, doubling, at most 30 s. */
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_MAX_MS = 30_000;
/** tools/list pages followed at most (a server that keeps handing out cursors is cut off). */
const MAX_LIST_PAGES = 50;

export interface ConnectionOptions {
  name: string;
  config: McpServerConfig;
  logger: Logger;
  clientVersion: string;
  now?: () => number;
  /** How long a stdio server gets to exit after stdin closes / after SIGTERM. */
  stopGraceMs?: number;
}

export class ServerUnavailableError extends Error {
  override readonly name = "ServerUnavailableError";
}

interface Live {
  client: Client;
  transport: Transport;
  /** Set once we close it on purpose, or once its failure is counted: a failure counts once. */
  closing: boolean;
}

export class McpConnection {
  readonly name: string;
  readonly config: McpServerConfig;
  readonly #log: Logger;
  readonly #options: ConnectionOptions;
  readonly #now: () => number;
  #live: Live | undefined;
  #connecting: Promise<Live> | undefined;
  #tools: McpTool[] | undefined;
  #failures: number[] = [];
  #retryAt = 0;
  #disabledUntil = 0;
  #closed = false;

  constructor(options: ConnectionOptions) {
    this.name = options.name;
    this.config = options.config;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#log = options.logger.child({ mcpServer: options.name });
  }

  get disabled(): boolean {
    return this.#now() < this.#disabledUntil;
  }

  /** The pid of a running stdio server (its process group). */
  get pid(): number | undefined {
    const transport = this.#live?.transport;
    return transport instanceof GroupStdioTransport ? transport.pid : undefined;
  }

  /** The server's tools; connects first when needed. Throws ServerUnavailableError when it cannot be reached. */
  async listTools(): Promise<McpTool[]> {
    const live = await this.#connect();
    if (this.#tools) return this.#tools;
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = await live.client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: this.config.connect_timeout_ms });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    this.#tools = tools;
    this.#log.info({ tools: tools.length }, "mcp-tools-listed");
    return tools;
  }

  /**
   * Calls a tool. Failures of the tool are results (`isError`); failures of the connection are
   * results too (the turn goes on), and the next call reconnects. A stale HTTP session (the
   * server restarted and forgot it) is reconnected and the call sent again at once: the server
   * refused it before running anything.
   */
  async callTool(tool: string, args: Record<string, unknown>, exposedName: string, signal: AbortSignal): Promise<ToolOutput> {
    for (let attempt = 0; ; attempt++) {
      let live: Live;
      try {
        live = await this.#connect();
      } catch (error) {
        return { text: `Error: the ${this.name} server is unavailable right now (${errorMessage(error)}).`, isError: true };
      }
      try {
        const result = await live.client.callTool({ name: tool, arguments: args }, undefined, {
          // A signal of its own per call: the SDK's abort listener then goes with the call,
          // not onto the turn's signal, which a long turn shares across many calls.
          signal: AbortSignal.any([signal]),
          timeout: this.config.timeout_ms,
        });
        return toToolOutput(result as McpCallResult, exposedName);
      } catch (error) {
        if (signal.aborted) throw error;
        if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
          return { text: `Error: ${exposedName} did not answer within ${Math.round(this.config.timeout_ms / 1000)} s; it was cancelled.`, isError: true };
        }
        if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
          return { text: `Error from ${exposedName}: ${error.message}`, isError: true };
        }
        const stale = isStaleSession(error);
        this.#log.warn({ err: { message: errorMessage(error) }, stale }, stale ? "mcp-session-expired-reconnecting" : "mcp-call-lost-connection");
        await this.#drop(live, !stale);
        if (stale && attempt === 0) continue;
        return { text: `Error: the connection to the ${this.name} server was lost during the call (${errorMessage(error)}); it will be reconnected for the next call.`, isError: true };
      }
    }
  }

  /** Stops the server (stdio: the whole process tree) and ends an HTTP session; safe to call twice. */
  async close(): Promise<void> {
    this.#closed = true;
    const pending = this.#connecting;
    const live = this.#live ?? (pending ? await pending.catch(() => undefined) : undefined);
    if (live) await this.#drop(live, false);
  }

  async #connect(): Promise<Live> {
    if (this.#closed) throw new ServerUnavailableError("shutting down");
    if (this.#live) return this.#live;
    if (this.#connecting) return this.#connecting;
    const now = this.#now();
    if (now < this.#disabledUntil) throw new ServerUnavailableError(`disabled after repeated crashes until ${new Date(this.#disabledUntil).toISOString()}`);
    if (now < this.#retryAt) throw new ServerUnavailableError(`reconnecting in ${Math.ceil((this.#retryAt - now) / 1000)} s`);
    this.#connecting = this.#open().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  async #open(): Promise<Live> {
    const client = new Client({ name: "longhaul", version: this.#options.clientVersion }, {
      capabilities: {},
      listChanged: { tools: { autoRefresh: false, onChanged: () => void (this.#tools = undefined) } },
    });
    const transport = this.#transport();
    const live: Live = { client, transport, closing: false };
    let connected = false;
    client.onclose = () => {
      if (this.#live === live) this.#live = undefined;
      if (!live.closing) {
        live.closing = true;
        if (this.#live === undefined && !connected) return this.#recordFailure();
        this.#log.warn("mcp-server-exited");
        this.#recordFailure();
      }
    };
    client.onerror = (error) => this.#log.debug({ err: { message: errorMessage(error) } }, "mcp-transport-error");
    const started = performance.now();
    try {
      await client.connect(transport, { timeout: this.config.connect_timeout_ms });
    } catch (error) {
      // The server may have exited (and been counted by onclose) before connect gave up.
      if (!live.closing) this.#recordFailure();
      live.closing = true;
      await transport.close().catch(() => undefined);
      this.#log.warn({ err: { message: errorMessage(error) } }, "mcp-connect-failed");
      throw new ServerUnavailableError(errorMessage(error), { cause: error });
    }
    if (this.#closed) {
      live.closing = true;
      await transport.close().catch(() => undefined);
      throw new ServerUnavailableError("shutting down");
    }
    connected = true;
    this.#live = live;
    this.#tools = undefined;
    const server = client.getServerVersion();
    this.#log.info({ server: server ? `${server.name} ${server.version}` : undefined, ms: Math.round(performance.now() - started), pid: this.pid }, "mcp-server-connected");
    return live;
  }

  #transport(): Transport {
    const { config } = this;
    if (config.command !== undefined) {
      return new GroupStdioTransport({
        command: config.command,
        args: config.args ?? [],
        cwd: config.cwd,
        env: config.env ?? {},
        graceMs: this.#options.stopGraceMs,
        onStderr: (line) => this.#log.info({ stderr: line }, "mcp-server-stderr"),
      });
    }
    return new StreamableHTTPClientTransport(new URL(config.url ?? ""), { requestInit: { headers: { ...config.headers } } });
  }

  async #drop(live: Live, countAsFailure: boolean): Promise<void> {
    if (this.#live === live) this.#live = undefined;
    if (countAsFailure && !live.closing) this.#recordFailure();
    live.closing = true;
    const transport = live.transport;
    if (transport instanceof StreamableHTTPClientTransport) {
      // Tell the server we are done with the session; it may already be gone.
      await Promise.race([transport.terminateSession().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    }
    await live.client.close().catch(() => undefined);
  }

  #recordFailure(): void {
    const now = this.#now();
    this.#failures = [...this.#failures.filter((at) => now - at < CRASH_WINDOW_MS), now];
    const streak = this.#failures.length;
    this.#retryAt = streak <= 1 ? now : now + Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (streak - 2));
    if (this.#failures.length >= CRASHES_TO_DISABLE && now >= this.#disabledUntil) {
      this.#disabledUntil = now + DISABLE_MS;
      this.#failures = [];
      // One warning per disable, not one per failed call.
      this.#log.warn({ failures: CRASHES_TO_DISABLE, disabledForS: DISABLE_MS / 1000 }, "mcp-server-disabled-after-repeated-crashes");
    }
  }
}

/** The server restarted and no longer knows our session id (the spec says 404; some servers answer 400). */
function isStaleSession(error: unknown): boolean {
  return error instanceof StreamableHTTPError && (error.code === 404 || error.code === 400);
}
