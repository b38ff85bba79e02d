import type { WebSocket, WebSocketServer } from "ws";
import { GATEWAY_INTENTS, type Payload } from "./fake-discord-world.js";

/**
 * The fake's gateway side: HELLO, IDENTIFY → READY, heartbeats, and sessions that outlive
 * their socket the way Discord's do. Events dispatched while a session has no socket are kept
 * and replayed on RESUME; a session that cannot be resumed (closed normally, or invalidated)
 * gets INVALID_SESSION (d: false) and the client must identify again.
 */

/** Discord keeps a bounded backlog per session; past it a session cannot be resumed. */
const RESUME_BACKLOG = 5_000;

interface GatewaySession {
  id: string;
  intents: number;
  sequence: number;
  backlog: Array<{ sequence: number; frame: string }>;
  socket: WebSocket | undefined;
  resumable: boolean;
}

export interface GatewayWorld {
  port(): number;
  botUserId: string;
  /** READY's guild list and the GUILD_CREATEs that follow, built from the current state. */
  guilds(): Payload[];
  readyPayload(sessionId: string): Payload;
  /** Filters what a session may see (intents); undefined drops the event for that session. */
  visibleTo(event: string, data: unknown, intents: number): unknown;
}

export class FakeGateway {
  readonly identifies: Payload[] = [];
  readonly resumes: Payload[] = [];
  heartbeats = 0;
  /** Close code sent instead of READY (4004 bad token, 4011 sharding required, 4014 disallowed intents); 0: none. */
  identifyCloseCode = 0;
  private readonly sessions = new Map<string, GatewaySession>();
  private readonly sockets = new Set<WebSocket>();
  /** Sockets that connected while the gateway was unreachable: they get HELLO once it is back. */
  private readonly waitingForHello = new Set<WebSocket>();
  private reachable = true;
  private nextSession = 0;

  constructor(server: WebSocketServer, private readonly world: GatewayWorld, private readonly heartbeatIntervalMs: number) {
    server.on("connection", (socket) => this.accept(socket));
  }

  /** Sends an event (op 0) to every live session; sessions without a socket keep it for RESUME. */
  dispatch(event: string, data: unknown): void {
    for (const session of this.sessions.values()) {
      if (!session.socket && !session.resumable) continue;
      const visible = this.world.visibleTo(event, data, session.intents);
      if (visible === undefined) continue;
      this.send(session, event, visible);
    }
  }

  /**
   * Drops every connection. With `resumable: false` the sessions are forgotten as well, so a
   * RESUME is refused and the client identifies anew (a new session: what follows a long outage).
   */
  disconnect(options: { resumable?: boolean; code?: number } = {}): void {
    for (const session of this.sessions.values()) {
      if (options.resumable === false) session.resumable = false;
      session.socket?.close(options.code ?? 4000, "fake disconnect");
      session.socket = undefined;
    }
    for (const socket of this.sockets) if (socket.readyState === socket.OPEN) socket.close(options.code ?? 4000, "fake disconnect");
  }

  /** While unreachable, new connections hang before HELLO (as behind a dead load balancer). */
  setReachable(reachable: boolean): void {
    this.reachable = reachable;
    if (!reachable) return;
    for (const socket of this.waitingForHello) this.hello(socket);
    this.waitingForHello.clear();
  }

  /** Whether some session has a socket that completed IDENTIFY or RESUME. */
  get connectedSessions(): number {
    return [...this.sessions.values()].filter((session) => session.socket !== undefined).length;
  }

  closeAll(): void {
    for (const socket of this.sockets) socket.terminate();
  }

  private accept(socket: WebSocket): void {
    this.sockets.add(socket);
    socket.on("close", (code) => {
      this.sockets.delete(socket);
      this.waitingForHello.delete(socket);
      for (const session of this.sessions.values()) {
        if (session.socket !== socket) continue;
        session.socket = undefined;
        // A client that closes with 1000/1001 ends its session; Discord will not resume it.
        if (code === 1000 || code === 1001) session.resumable = false;
      }
    });
    socket.on("message", (raw) => this.receive(socket, raw.toString()));
    if (this.reachable) this.hello(socket);
    else this.waitingForHello.add(socket);
  }

  private hello(socket: WebSocket): void {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ op: 10, d: { heartbeat_interval: this.heartbeatIntervalMs } }));
  }

  private receive(socket: WebSocket, raw: string): void {
    const frame = JSON.parse(raw) as { op: number; d: Payload | number | null };
    const data = typeof frame.d === "object" && frame.d !== null ? frame.d : {};
    switch (frame.op) {
      case 1:
        this.heartbeats += 1;
        socket.send(JSON.stringify({ op: 11 }));
        return;
      case 2:
        this.identify(socket, data);
        return;
      case 6:
        this.resume(socket, data);
        return;
      default:
        // Discord closes on an opcode it does not know (4001).
        socket.close(4001, "Unknown opcode.");
    }
  }

  private identify(socket: WebSocket, data: Payload): void {
    this.identifies.push(data);
    if (this.identifyCloseCode !== 0) {
      socket.close(this.identifyCloseCode, "Refused by the fake.");
      return;
    }
    this.nextSession += 1;
    const session: GatewaySession = {
      id: `fake-session-${this.nextSession}`, intents: Number(data.intents ?? 0), sequence: 0, backlog: [], socket, resumable: true,
    };
    this.sessions.set(session.id, session);
    this.send(session, "READY", this.world.readyPayload(session.id));
    if (session.intents & GATEWAY_INTENTS.guilds) for (const guild of this.world.guilds()) this.send(session, "GUILD_CREATE", guild);
  }

  private resume(socket: WebSocket, data: Payload): void {
    this.resumes.push(data);
    const session = this.sessions.get(String(data.session_id));
    if (!session || !session.resumable || (session.backlog[0] && session.backlog[0].sequence > Number(data.seq) + 1)) {
      // d: false — the client must identify again; missed events are gone.
      socket.send(JSON.stringify({ op: 9, d: false }));
      return;
    }
    session.socket = socket;
    for (const { sequence, frame } of session.backlog) if (sequence > Number(data.seq)) socket.send(frame);
    this.send(session, "RESUMED", null);
  }

  private send(session: GatewaySession, event: string, data: unknown): void {
    session.sequence += 1;
    const frame = JSON.stringify({ op: 0, t: event, s: session.sequence, d: data });
    session.backlog.push({ sequence: session.sequence, frame });
    if (session.backlog.length > RESUME_BACKLOG) session.backlog.shift();
    const socket = session.socket;
    if (socket && socket.readyState === socket.OPEN) socket.send(frame);
  }
}
