import type { IncomingMessage, ServerResponse } from "node:http";
import type { IngressPort, OutboundReply, Platform, TurnActivity } from "../core/channel.js";

export type { ChannelCursors, ChatMove, ChatMoveResult, InboundMessage, IngressPort, OutboundReply, Platform, ReplyAction, ReplyTarget, SubmitResult, TurnActivity } from "../core/channel.js";
export { REPLY_CONTEXT_MAX_CHARS } from "../core/channel.js";

/**
 * The seam between chat platforms and the pipeline. Only `src/adapters/` imports grammy or
 * discord.js; everything else speaks these types.
 */

export interface ChannelAdapter {
  readonly platform: Platform;
  /**
   * HTTP routes the gateway's server must mount (path → handler), e.g. the Telegram webhook.
   * Read after `start()` resolves.
   */
  readonly httpRoutes?: ReadonlyMap<string, (request: IncomingMessage, response: ServerResponse) => void>;
  /** Connects and starts handing messages to `ingress`. Resolves once intake is running. */
  start(ingress: IngressPort): Promise<void>;
  /**
   * Sends a reply. `fromPart` resumes a partially sent reply (parts already delivered are
   * skipped); `onPartSent` is called after each part so the sender can record progress.
   */
  send(reply: OutboundReply, options: SendOptions): Promise<void>;
  /** Turn activity for typing indicators; optional. Must never throw. */
  onActivity?(activity: TurnActivity): void;
  /** Stops intake and releases connections; safe to call twice. */
  stop(): Promise<void>;
  /** For /healthz: whether the platform connection is up. */
  isConnected(): boolean;
}

export interface SendOptions {
  fromPart: number;
  onPartSent(partIndex: number): Promise<void>;
}
