/** A command segment: /stop while a tool call waits for approval, or any command of commands/. */
import { COMMAND_MENU } from "../core/commands.js";
import type { InboxEntry } from "../session/store.js";
import type { CompactionScope } from "../session-context/index.js";
import { describeTools } from "../tools/index.js";
import { resolveApproval } from "./approvals.js";
import type { CommandContext } from "./commands/command-context.js";
import type { ParsedCommand } from "./commands/parse.js";
import { runCommand } from "./commands/run-command.js";
import type { ChatPorts, CommandPorts } from "./ports.js";
import { addReply, answering } from "./replies.js";
import { toolScopeOf, turnTools } from "./tool-scope.js";
import type { TurnRun } from "./turn-types.js";
import { chatTimeZone } from "./chat-time-zone.js";

/** Runs `command`; → the session id it archived (`/new`), if any. */
export async function runCommandSegment(run: TurnRun<CommandPorts & ChatPorts>, command: ParsedCommand, entry: InboxEntry, scope: CompactionScope): Promise<string | undefined> {
  const { engine, input } = run;
  if (command.name === "stop" && run.state.pendingApproval) {
    await resolveApproval(run, "stopped", { continueLoop: false });
    addReply(run, "Stopped: the tool call waiting for approval was not run.", "notice", answering(run, [entry]));
    return undefined;
  }
  const toolScope = toolScopeOf(input.sessionKey, [entry], input.target);
  const commandContext: CommandContext = {
    engine, state: run.state, sessionKey: input.sessionKey, scope, now: engine.now(),
    describeTools: async () => describeTools(await engine.tools.forTurn(toolScope, input.log), engine.tools.builtins),
    toolDefinitions: async () => (await turnTools(engine, run.state, toolScope, input.log)).definitions(),
    entry,
    timeZone: chatTimeZone(run.state, engine.timeZone),
  };
  const outcome = await runCommand(command, commandContext);
  // Messages of this batch before /new land in the fresh transcript: kept, not lost.
  const archivedSessionId = outcome.archive ? run.state.sessionId : undefined;
  run.state = outcome.state;
  // A command that called a model (/compress) may have crossed a budget threshold.
  const warnings = (run.budget?.takeWarnings() ?? []).map((warning) => `⚠️ ${warning}`);
  // The registry's private answers (/usage, /memory, /export) and refusals are the asker's alone.
  const isPrivate = outcome.refused === true || COMMAND_MENU.some((spec) => spec.name === command.name && spec.privateAnswer === true);
  addReply(run, [outcome.text, ...warnings].join("\n\n"), "notice", answering(run, [entry]), {
    ...(outcome.documents ? { documents: outcome.documents } : {}),
    ...(isPrivate ? { private: true } : {}),
  });
  return archivedSessionId;
}
