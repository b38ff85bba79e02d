/**
 * A chat segment: the agent turn that answers consecutive chat messages (or a fired task) —
 * tools for this chat, hygiene, the tool loop, and what the model said about pictures.
 */
import { messageOrigin } from "../core/channel.js";
import type { ChatMessage, UserMessage } from "../core/messages.js";
import { markStage } from "../core/stages.js";
import type { InboxEntry } from "../session/store.js";
import type { CompactionScope } from "../session-context/index.js";
import { ToolRegistry } from "../tools/index.js";
import { resolveApproval } from "./approvals.js";
import type { ChatPorts } from "./ports.js";
import { answering, replyIdOf } from "./replies.js";
import { finishLoop, runLoop } from "./session-loop.js";
import { toolScopeOf } from "./tool-scope.js";
import type { TurnRun } from "./turn-types.js";
import { stampFor, toUserMessages } from "./user-messages.js";

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
  run.transcript.push(...userMessages);
  let context: ChatMessage[] = [...run.state.live, ...userMessages];
  run.state.lastTarget = input.target;

  const toolScope = toolScopeOf(input.sessionKey, entries, input.target);
  let { tools } = await engine.tools.forTurn(toolScope, input.log);
  // One step waits for approval at a time: a task that runs meanwhile goes without the tools
  // that would ask again.
  if (run.state.pendingApproval) tools = new ToolRegistry(tools.list().filter((tool) => !tool.needsApproval));
  const toolsScope: CompactionScope = { ...scope, tools: tools.definitions() };
  const last = entries[entries.length - 1];
  // Whose memory this conversation reads; at session start, its snapshot.
  if (engine.memory && last) await engine.memory.prepareTurn(run.state, last);
  const hygiene = await engine.context.hygiene(run.state, context, toolsScope);
  context = hygiene.context;
  const origin = last ? messageOrigin(last) : undefined;
  markStage("loop", input.sessionKey);
  const result = await runLoop(run, context, tools, toolsScope, 0, origin);
  markStage("loop-done", input.sessionKey);
  finishLoop(run, result, {
    answers: answering(run, entries),
    requestedBy: { platform: input.target.platform, userId: last?.userId ?? "", userName: last?.userName ?? "" },
    scope: { chatId: toolScope.chatId, ...(toolScope.parentChatId ? { parentChatId: toolScope.parentChatId } : {}), userIds: [...toolScope.userIds] },
    ...(origin ? { origin } : {}),
    ...(hygiene.notice ? { notices: [hygiene.notice] } : {}),
  });
  // What the model said about the pictures it was shown: kept with them for summaries and recall.
  // The vision flag is a Redis read: asked only when there are pictures (not on every turn).
  const pictures = shownPictures(userMessages);
  if (engine.media && pictures.length > 0 && result.stoppedBy !== "approval" && (await engine.media.vision.enabled(engine.llm.model))) describePictures(pictures, result.reply);
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
