/**
 * The points a message passes on its way to an answer, published on a diagnostics channel so
 * that a benchmark can see where a turn's time goes (`bench/pipeline.ts --stages`). Nothing is
 * built or published while no one subscribes: the cost is one flag test per point.
 */
import { channel } from "node:diagnostics_channel";

export type TurnStage =
  /** Gateway: a platform message reached the ingress; then stored with its turn job enqueued. */
  | "ingress" | "enqueued"
  /** Worker: the turn job was taken; the session begun (lease, claim, state). */
  | "picked" | "begun"
  /** Worker: the agent loop of a chat segment starts (context built, hygiene done); it ended. */
  | "loop" | "loop-done"
  /** Worker: an LLM call's budget was reserved; its answer arrived; its cost was settled. */
  | "reserved" | "answered" | "settled"
  /** Worker: the commit is sent; it was answered. */
  | "commit" | "committed"
  /** Gateway: the delivery job was taken; the outbox begun; a reply handed to the platform. */
  | "delivery-picked" | "delivery-begun" | "sending";

export interface StageMark {
  stage: TurnStage;
  sessionKey: string;
  /** Wall-clock ms with µs resolution (performance.timeOrigin + now): comparable across processes. */
  at: number;
}

export const turnStages = channel("longhaul:turn-stage");

export function markStage(stage: TurnStage, sessionKey: string): void {
  if (turnStages.hasSubscribers) turnStages.publish({ stage, sessionKey, at: performance.timeOrigin + performance.now() } satisfies StageMark);
}
