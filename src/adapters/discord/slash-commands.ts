/**
 * A slash command in: stored, then acknowledged with a deferred reply (Discord's 3 s; ephemeral
 * where the registry says the answer is private); it is submitted as the text a user would have typed
 * (`/name text`, options in the registry's order), behind the channel's messages, so the worker runs it on the typed command's
 * code path. What the adapter answers itself (access refused) is ephemeral.
 */
import { MessageFlags, type ChatInputCommandInteraction } from "discord.js";
import { COMMAND_MENU } from "../../core/commands.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { toInboundCommand } from "./actions.js";
import { typedCommand } from "./commands.js";
import type { Intake } from "./intake.js";
import type { InteractionReplies } from "./interactions.js";

export interface SlashCommandPorts {
  intake: Intake;
  interactions: InteractionReplies;
  logger: Logger;
}

/** Never throws (discord.js does not await listeners). */
export function takeSlashCommand(interaction: ChatInputCommandInteraction, { intake, interactions, logger }: SlashCommandPorts): void {
  try {
    const spec = COMMAND_MENU.find((candidate) => candidate.name === interaction.commandName);
    const ephemeral = spec?.privateAnswer === true || spec === undefined;
    const inbound = toInboundCommand(interaction, typedCommand(interaction.commandName, spec, interaction.options));
    // Stored first, acknowledged after, as a button press (button-presses.ts): Discord never
    // delivers an interaction again, so "thinking…" must not promise what a crash could lose.
    let acknowledge: (done: Promise<unknown>) => void = () => undefined;
    interactions.remember(inbound.messageId, {
      id: interaction.id, applicationId: interaction.applicationId, token: interaction.token, createdAt: interaction.createdTimestamp, kind: "command", ephemeral,
      acknowledged: new Promise((resolve) => { acknowledge = resolve; }),
    });
    const defer = (): Promise<unknown> => {
      const done = interaction.deferReply(ephemeral ? { flags: MessageFlags.Ephemeral } : {}).catch((error: unknown) =>
        logger.warn({ interactionId: interaction.id, error: errorMessage(error) }, "interaction not acknowledged"));
      acknowledge(done);
      return done;
    };
    if (!spec) {
      // A command of an older registration, not ours any more (the sync deletes it).
      void defer().then(() => interactions.answerPrivately(inbound.messageId, "I don't know that command any more; /help lists mine."));
      return;
    }
    void intake.submitInOrder(inbound).then(async (result) => {
      logger.debug({ messageId: inbound.messageId, command: spec.name, status: result?.status }, "slash command submitted");
      // Not stored: unacknowledged, the user's client says the command failed, and they run it again.
      if (result === undefined) return acknowledge(Promise.resolve());
      await defer();
      if (result.status === "denied" || result.status === "rate-limited") {
        await interactions.answerPrivately(inbound.messageId, result.notice ?? "I'm not answering in this channel.");
      }
    });
  } catch (error) {
    logger.warn({ interactionId: interaction.id, error: errorMessage(error) }, "malformed slash command skipped");
  }
}
