import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/**
 * Prometheus metrics of one process. Created once in `main` and passed down; tests create
 * their own. Labels are small closed sets (outcome, class, reason, platform), never ids.
 */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "longhaul_process_" });
  return {
    registry,
    turns: new Counter({ name: "longhaul_turns_total", help: "Turns by outcome", labelNames: ["outcome"] as const, registers: [registry] }),
    turnSeconds: new Histogram({
      name: "longhaul_turn_duration_seconds", help: "Turn latency from claim to commit", registers: [registry],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160],
    }),
    llmTokens: new Counter({ name: "longhaul_llm_tokens_total", help: "LLM tokens by kind (input, output, cached)", labelNames: ["kind", "role"] as const, registers: [registry] }),
    llmErrors: new Counter({ name: "longhaul_llm_errors_total", help: "LLM errors by class", labelNames: ["class"] as const, registers: [registry] }),
    compactions: new Counter({ name: "longhaul_compactions_total", help: "Compactions by reason and status", labelNames: ["reason", "status"] as const, registers: [registry] }),
    compactionTokensSaved: new Counter({ name: "longhaul_compaction_tokens_saved_total", help: "Tokens removed from live contexts by compaction", registers: [registry] }),
    repliesDelivered: new Counter({ name: "longhaul_replies_delivered_total", help: "Replies delivered by platform", labelNames: ["platform"] as const, registers: [registry] }),
    partsUnconfirmed: new Counter({
      name: "longhaul_reply_parts_unconfirmed_total", registers: [registry], labelNames: ["platform"] as const,
      help: "Reply parts whose send outcome was unknown (answer lost after the platform may have acted): counted as sent, not sent again",
    }),
    sendBudgetRefusals: new Counter({
      name: "longhaul_send_budget_refusals_total", registers: [registry], labelNames: ["platform", "priority"] as const,
      help: "Platform calls the bot's send budget refused, by priority: previews and typing skipped, finals handed back to the delivery queue (sent after the wait), notices that would have waited over 10 s",
    }),
    inbound: new Counter({ name: "longhaul_inbound_messages_total", help: "Inbound messages by platform and result", labelNames: ["platform", "result"] as const, registers: [registry] }),
    queueWaitSeconds: new Histogram({
      name: "longhaul_queue_wait_seconds", registers: [registry],
      help: "How long a message waited from its arrival (stored by the ingress) to the turn that takes it beginning",
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    }),
    queueDepth: new Gauge({ name: "longhaul_queue_depth", help: "Jobs waiting or delayed per queue", labelNames: ["queue"] as const, registers: [registry] }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
