/**
 * A chat segment: the agent turn that answers consecutive chat messages (or a fired task) —
 * tools for this chat, hygiene, the tool loop, and what the model said about pictures.
 */
import { messageOrigin } from "../core/channel.js";
import type { ChatMessage, UserMessage } from "../core/messages.js";
import { markStage } from "../core/stages.js";
import type { InboxEntry } from "../session/store.js";
import type { CompactionScope } from "../session-context/index.js";
import { resolveApproval } from "./approvals.js";
import type { ChatPorts } from "./ports.js";
import { answering, replyIdOf } from "./replies.js";
import { finishLoop, runLoop } from "./session-loop.js";
import { actingEntry, toolScopeOf, turnTools } from "./tool-scope.js";
import { ContextOverflowError } from "../errors.js";
import { FailedAfterCompaction } from "./turn-failure.js";
import type { TurnRun } from "./turn-types.js";
import { stampFor, toUserMessages } from "./user-messages.js";
import { speakAnswer } from "./voice-reply.js";

export async function runChatSegment(run: TurnRun<ChatPorts>, entries: readonly InboxEntry[], newId: () => string, scope: CompactionScope): Promise<void> {
  const { engine, input } = run;
  // A new message while a tool call waits for approval: the call is not run, and the
  // conversation goes on with what the user wrote (docs/tools.md). A fired task is nobody
  // answering: the request keeps waiting (below).
  const scheduledTask = entries.some((entry) => entry.scheduled);
  if (run.state.pendingApproval && !scheduledTask) await resolveApproval(run, "superseded", { continueLoop: false });

  // The answer's reply id names its preview, so a retried turn continues the same preview.
  input.preview?.begin(replyIdOf(input, run.replies.length));
  const userMessages = toUserMessages(entries, newId, stampFor(engine, run.state));
  // The transcript keeps every message whole; the context holds a paste over a quarter of the
  // window as its head and tail with its recall id (issue #31), and the user is told once.
  run.transcript.push(...userMessages);
  run.state.lastTarget = input.target;

  const toolScope = toolScopeOf(input.sessionKey, entries, input.target);
  // Whom the tools were chosen for: idle compaction offers the same (latestTurnToolDefinitions).
  const accessScope = { chatId: toolScope.chatId, ...(toolScope.parentChatId ? { parentChatId: toolScope.parentChatId } : {}), userIds: [...toolScope.userIds] };
  run.state.toolScope = accessScope;
  // One step waits for approval at a time: a task that runs meanwhile goes without the tools
  // that would ask again (turnTools).
  const tools = await turnTools(engine, run.state, toolScope, input.log);
  // Whose memory this conversation reads; at session start, its snapshot. Taken before the
  // paste cap: the memory block rides on every request, so the cap must leave room for it, or
  // the first request overflows and the paste is cut again.
  const last = entries[entries.length - 1];
  if (engine.memory && last) await engine.memory.prepareTurn(run.state, last);
  const admitted = engine.context.admitUserMessages(run.state, userMessages, tools.definitions());
  // `recall` reads the original at once (the transcript is stored only with the commit), paged
  // like a capped tool output.
  for (const message of userMessages) {
    if (admitted.cutIds.includes(message.id)) await engine.toolOutputs.save(input.sessionKey, run.state.sessionId, message.id, message.content);
  }
  let context: ChatMessage[] = [...run.state.live, ...admitted.messages];
  // A compaction paid for before the turn's first step (hygiene, or the in-loop check or an
  // overflow before the first answer) is kept if the turn then fails: its context ends with
  // this segment's user messages, so it holds nothing the transcript lacks.
  let compacted: readonly ChatMessage[] | undefined;
  const lastUserId = admitted.messages.at(-1)?.id;
  const onCompacted = (result: readonly ChatMessage[]) => {
    if (lastUserId !== undefined && result.at(-1)?.id === lastUserId) compacted = result;
  };
  const toolsScope: CompactionScope = { ...scope, tools: tools.definitions(), onCompacted };
  let result: Awaited<ReturnType<typeof runLoop>>;
  let hygiene: Awaited<ReturnType<typeof engine.context.hygiene>>;
  // The tools act for the most restricted speaker of the batch (actingEntry), never for
  // whoever happened to write last.
  const acting = actingEntry(entries, engine.approval.admins);
  const origin = acting ? messageOrigin(acting) : undefined;
  try {
    hygiene = await engine.context.hygiene(run.state, context, toolsScope);
    context = hygiene.context;
    markStage("loop", input.sessionKey);
    result = await runLoop(run, context, tools, toolsScope, 0, origin);
  } catch (error) {
    // Not after an overflow: the compaction did not make the request fit, and the state it
    // leaves (the learned window) is the failed turn's to drop, as before.
    throw compacted === undefined || error instanceof ContextOverflowError ? error : new FailedAfterCompaction(compacted, error);
  }
  markStage("loop-done", input.sessionKey);
  const notices = [...(admitted.cutIds.length > 0 ? [pasteNotice(admitted.cutIds)] : []), ...(hygiene.notice ? [hygiene.notice] : [])];
  finishLoop(run, result, {
    answers: answering(run, entries),
    requestedBy: { platform: input.target.platform, userId: acting?.userId ?? "", userName: acting?.userName ?? "" },
    scope: accessScope,
    ...(origin ? { origin } : {}),
    ...(notices.length > 0 ? { notices } : {}),
  });
  if (result.stoppedBy !== "approval") await speakAnswer(run, entries, result.reply);
  // What the model said about the pictures it was shown: kept with them for summaries and recall.
  // The vision flag is a Redis read: asked only when there are pictures (not on every turn).
  const pictures = shownPictures(userMessages);
  if (engine.media && pictures.length > 0 && result.stoppedBy !== "approval" && (await engine.media.vision.enabled(engine.llm.model))) describePictures(pictures, result.reply);
}

/** Told once, with the answer to the message that was cut. */
function pasteNotice(cutIds: readonly string[]): string {
  const which = cutIds.length === 1 ? "Your message was" : "Your messages were";
  return `${which} too long to keep whole in my context, so I see the beginning and the end; the full text is saved and I can read any part of it (recall ${cutIds.map((id) => `"${id}"`).join(", ")}).`;
}

/** Longest description kept with a picture (the model's answer when it was shown). */
const DESCRIPTION_MAX_CHARS = 1_000;

type Attachment = NonNullable<UserMessage["attachments"]>[number];

/** The pictures that went to the model inline. */
function shownPictures(messages: readonly UserMessage[]): Attachment[] {
  return messages.flatMap((message) => (message.attachments ?? []).filter((attachment) => attachment.kind === "image" && attachment.inline && attachment.problem === undefined));
}

function describePictures(pictures: readonly Attachment[], reply: string): void {
  const description = reply.length > DESCRIPTION_MAX_CHARS ? `${reply.slice(0, DESCRIPTION_MAX_CHARS)}…` : reply;
  for (const picture of pictures) picture.description = description;
}
