/** The model a session talks to: its /model choice from the catalogue, else the default. */
import type { InboundMessage } from "../core/channel.js";
import { requesterOf, type Admins } from "../models/commands.js";
import type { SessionState } from "../session/state.js";
import type { ModelPorts, RoutingPorts } from "./ports.js";

/** Whom a segment answers: every speaker must be allowed the chosen model (`allowedModel`). */
export interface ModelSpeakers {
  speakers: readonly InboundMessage[];
  admins: Admins;
}

/**
 * The engine of the session's chosen model (the default when it chose none, or its choice is
 * gone). With `who`, the model's `allow` list is asked for this segment's speakers: a chat keeps
 * its /model choice, but a speaker the list no longer names (a user removed from it, another
 * member of the group) is answered by the default model (issue 29 item 8).
 */
export function activeEngine<E extends RoutingPorts>(engine: E, state: SessionState, who?: ModelSpeakers): Omit<E, keyof ModelPorts> & ModelPorts {
  if (!engine.models) return engine;
  const { llm, context, model } = engine.models.bind(allowedModel(engine.models.catalogue, state, who));
  if (llm === engine.llm) return engine;
  return { ...engine, llm, context, prices: model.prices };
}

type Catalogue = NonNullable<RoutingPorts["models"]>["catalogue"];

/** The session's choice if every speaker may use it, else the default. */
export function allowedModel(catalogue: Catalogue, state: SessionState, who?: ModelSpeakers): ReturnType<Catalogue["active"]> {
  const chosen = catalogue.active(state.chat?.model);
  if (!who || who.speakers.every((speaker) => catalogue.mayUse(chosen, requesterOf(speaker, who.admins)))) return chosen;
  return catalogue.default;
}
