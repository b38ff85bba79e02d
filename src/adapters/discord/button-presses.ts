/**
 * A button press in: stored first, acknowledged after (issue 28 item 7). Discord never delivers
 * an interaction again, so an acknowledgement sent before the press is stored would tell the
 * user "done" for a press a gateway crash then loses. Unacknowledged, the user's client says
 * "This interaction failed" and the button is still there to press again. A store slower than
 * Discord's 3 s costs the same message for a press that was taken (logged). A reply through the
 * interaction waits for its acknowledgement. A press the ingress refused (someone else's
 * approval request) or turned away (not allowed, rate-limited) is answered at once with an
 * ephemeral message, to the presser alone.
 */
import { MessageFlags, type ButtonInteraction } from "discord.js";
import { errorMessage } from "../../errors.js";
import { toInboundAction } from "./actions.js";
import type { SlashCommandPorts } from "./slash-commands.js";

/** Never throws (discord.js does not await listeners). */
export function takeButtonPress(interaction: ButtonInteraction, { intake, interactions, logger }: SlashCommandPorts): void {
  try {
    const inbound = toInboundAction(interaction);
    let acknowledge: (done: Promise<unknown>) => void = () => undefined;
    interactions.remember(inbound.messageId, {
      id: interaction.id, applicationId: interaction.applicationId, token: interaction.token, createdAt: interaction.createdTimestamp, kind: "button", ephemeral: false,
      acknowledged: new Promise((resolve) => { acknowledge = resolve; }),
    });
    void intake.submitInOrder(inbound).then(async (result) => {
      logger.debug({ messageId: inbound.messageId, channelId: inbound.chatId, status: result?.status }, "button press submitted");
      if (result === undefined) return acknowledge(Promise.resolve());
      const notice = result.status === "refused" || result.status === "denied" || result.status === "rate-limited" ? result.notice : undefined;
      if (notice !== undefined) {
        // Nothing was stored: nothing else will answer this press. Its notice is the presser's alone.
        interactions.forget(interaction.id);
        const done = interaction.reply({ content: notice, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } }).catch((error: unknown) =>
          logger.warn({ interactionId: interaction.id, channelId: inbound.chatId, error: errorMessage(error) }, "refusal of a press not shown"));
        acknowledge(done);
        return void (await done);
      }
      const done = interaction.deferUpdate().catch((error: unknown) =>
        logger.warn({ interactionId: interaction.id, channelId: inbound.chatId, status: result.status, error: errorMessage(error) }, "interaction not acknowledged (the press was stored)"));
      acknowledge(done);
      await done;
    });
  } catch (error) {
    logger.warn({ interactionId: interaction.id, error: errorMessage(error) }, "malformed interaction skipped");
  }
}
