/** The model a session talks to: its /model choice from the catalogue, else the default. */
import type { SessionState } from "../session/state.js";
import type { ModelPorts, RoutingPorts } from "./ports.js";

/** The engine of the session's chosen model (the default when it chose none, or its choice is gone). */
export function activeEngine<E extends RoutingPorts>(engine: E, state: SessionState): Omit<E, keyof ModelPorts> & ModelPorts {
  if (!engine.models) return engine;
  const { llm, context, model } = engine.models.bind(engine.models.catalogue.active(state.chat?.model));
  if (llm === engine.llm) return engine;
  return { ...engine, llm, context, prices: model.prices };
}
