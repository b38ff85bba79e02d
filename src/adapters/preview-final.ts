/**
 * How a reply takes over its live preview (SendOptions.preview), the same on every platform; the
 * adapter brings its own send, edit and delete.
 */
import type { SendOptions } from "./channel-adapter.js";

type OnPartSent = SendOptions["onPartSent"];

export interface PreviewFinalSteps {
  /** Sends the reply from `fromPart` as new messages, as a reply without a preview. */
  send(fromPart: number, onPartSent: OnPartSent): Promise<void>;
  /** Deletes the preview message (one already gone is fine). */
  remove(): Promise<void>;
  /** Edits the (one-part) reply into the preview → false when the platform refused it for good. */
  edit(): Promise<boolean>;
  /** The reply is all out (the typing indicator may stop). */
  finished(): void;
}

/** → true when the preview decided this send; false: the reply goes out as usual. */
export async function sendOverPreview(
  preview: NonNullable<SendOptions["preview"]>,
  { fromPart, onPartSent }: Pick<SendOptions, "fromPart" | "onPartSent">,
  steps: PreviewFinalSteps,
): Promise<boolean> {
  if (!preview.only && fromPart <= 1) {
    // The final replaces the live preview: an edit never notifies, so the answer goes out as
    // new messages and the silent preview is deleted once part 1 is out and recorded —
    // recorded as not the last even when it is, so that a crash before the deletion never
    // sends the answer twice; the delivery that resumes at part 2 deletes the preview instead.
    if (fromPart === 1) {
      await steps.remove();
      await steps.send(1, onPartSent);
      return true;
    }
    await steps.send(0, async (partIndex, sent) => {
      if (partIndex !== 0) return onPartSent(partIndex, sent);
      await onPartSent(0, { ...sent, last: false });
      await steps.remove();
    });
    return true;
  }
  if (fromPart !== 0) return false;
  // A preview-only reply (/stop) takes the live preview over: it is edited into it.
  if (await steps.edit()) {
    await onPartSent(0, { last: true });
    steps.finished();
  } else {
    await preview.onRefused();
  }
  return true;
}
