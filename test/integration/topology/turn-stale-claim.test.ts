/**
 * A turn whose claim a stale master answered: the session's master frozen past its failover and
 * woken answers BEGIN_TURN from its own copy for a moment — a claim its replica, now the master,
 * never gets. By then the turn's connection may follow the failover (a Cluster client's slot map
 * updated, a Sentinel client reconnected): its heartbeats renew on the new master, where the lease
 * is free and HEARTBEAT takes it, and END_TURN refuses the commit there ('stale', the claimed
 * message still waits in the inbox). Nothing of the turn is kept — but its tools already ran, and
 * the new master's turn runs them again: a side effect outside Redis (an MCP tool that posts or
 * books something; the LLM's tokens) happens twice for one message.
 *
 * Played with real servers and the switch made by hand: the stale master (no replica), the new
 * master (with a replica), and the turn's connection moving from the first to the second right
 * after BEGIN_TURN answered — the moment delivery-stale-head.test.ts moves the delivery's.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attemptToken } from "../../../src/session/lease.js";
import { turnStages, type StageMark } from "../../../src/core/stages.js";
import { silentLogger } from "../../../src/logger.js";
import { createMetrics } from "../../../src/metrics.js";
import { createProducers, createRedis, readConfirmer, type Redis } from "../../../src/queue/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { ToolCatalog, type Tool } from "../../../src/tools/index.js";
import { processTurn, type TurnDeps } from "../../../workers/process-turn.js";
import { engineOver, respondingLlm } from "../../helpers/agent-turns.js";
import { uniquePrefix } from "../../helpers/config.js";
import { following } from "../../helpers/following-connection.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";
import { sleep } from "../../helpers/stall-run.js";

const SESSION = "console:stale-claim";

describe("a turn whose claim a stale master answered", () => {
  let staleServer: RedisServerHandle;
  let newServer: RedisServerHandle;
  let replicaServer: RedisServerHandle;
  const clients: Redis[] = [];

  beforeAll(async () => {
    [staleServer, newServer, replicaServer] = await Promise.all([startRedisServer(), startRedisServer(), startRedisServer()]);
    const replica = createRedis(replicaServer.url);
    clients.push(replica);
    await replica.replicaof("127.0.0.1", newServer.port);
    while (!/master_link_status:up/.test(await replica.info("replication"))) await sleep(50);
  }, 60_000);

  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await Promise.all([staleServer, newServer, replicaServer].map((server) => server?.dispose()));
  });

  it("runs no tool before a replica confirms the claim: the side effect happens once, by the turn the new master runs", async () => {
    const prefix = uniquePrefix();
    const [stale, fresh] = [createRedis(staleServer.url), createRedis(newServer.url)];
    clients.push(stale, fresh);
    const message = inbound({ text: "book it", messageId: "m1", sessionKey: SESSION });
    // Both masters hold m1 waiting.
    await new SessionStore(stale, prefix).appendInbox(message, 0);
    await new SessionStore(fresh, prefix).appendInbox(message, 0);

    const bookings: string[] = [];
    const book: Tool = {
      definition: { type: "function", function: { name: "book", description: "Books a table.", parameters: { type: "object", properties: {}, additionalProperties: false } } },
      run: async () => {
        bookings.push("booked");
        return "booked";
      },
    };
    const tools = new ToolCatalog({ builtins: [book], logger: silentLogger });
    // Every turn books, then answers once the tool result is in.
    const llm = respondingLlm((request) => request.messages[request.messages.length - 1]?.role === "tool"
      ? { content: "Booked.", toolCalls: [] }
      : { content: "", toolCalls: [{ id: "call-1", type: "function", function: { name: "book", arguments: "{}" } }] });
    const { connection, switchOver } = following(stale, fresh);
    const store = new SessionStore(connection, prefix);
    const producers = createProducers(fresh, prefix);
    const confirm = readConfirmer(connection, 1, 1_000);
    const deps: TurnDeps = {
      store, producers, engine: engineOver(llm, tools), busyMode: "collect", leaseMs: 10_000,
      publishActivity: async () => undefined, logger: silentLogger, metrics: createMetrics(), now: () => Date.now(),
      // As worker-role.ts wires it with REDIS_MIN_REPLICAS_ACK=1.
      confirmClaim: (sessionKey) => confirm(store.keys(sessionKey).lease),
    };
    const attempt = () => ({ token: attemptToken("turn"), finalAttempt: false, signal: new AbortController().signal });
    let begun = 0;
    const onStage = (mark: unknown) => {
      const { stage, sessionKey } = mark as StageMark;
      // The stale master answered BEGIN_TURN; from now on the connection reaches the new master.
      if (stage === "begun" && sessionKey === SESSION && begun++ === 0) switchOver();
    };
    turnStages.subscribe(onStage);
    try {
      // The attempts a turn job makes (busy: it comes back later), until m1 is answered.
      const outcomes: string[] = [];
      for (let round = 0; round < 5 && !outcomes.includes("answered"); round++) outcomes.push((await processTurn(deps, SESSION, attempt())).status);
      expect(begun).toBeGreaterThan(0);
      // Unconfirmed, the first attempt comes back later (busy) with nothing run; the next one answers.
      expect(outcomes).toEqual(["busy", "answered"]);
      expect(bookings).toEqual(["booked"]);
      const transcript = await fresh.lrange(store.keys(SESSION).transcript, 0, -1);
      expect(transcript.filter((entry) => entry.includes("book it"))).toHaveLength(1);
    } finally {
      turnStages.unsubscribe(onStage);
      await producers.close();
    }
  }, 60_000);
});
