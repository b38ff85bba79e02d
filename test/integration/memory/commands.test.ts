import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, textOf, type FakeLlm, type RecordedRequest } from "../../fakes/fake-llm.js";
import { isSummarizerRequest, requestTokens } from "../../helpers/agent-fixtures.js";
import { testConfig } from "../../helpers/config.js";
import { contextNumbers, forgetRewriter, isFlush, isForgetRewrite, memoryModel, requestText } from "../../helpers/memory.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import type { InboundMessage } from "../../../src/core/channel.js";

const DM = { chatId: "dm-bo", sessionKey: "console:dm-bo", chatType: "private" as const, userId: "bo", userName: "Bo" };
const GROUP = { chatId: "crew", sessionKey: "console:crew", chatType: "group" as const, userId: "bo", userName: "Bo" };
const PIN = "Budget: 4,800 € — hard ceiling, 🚫 no overruns (agreed 2026-11-30)";

describe("memory commands and the visible context", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  let count = 0;
  let summaries = 0;
  const say = (where: Partial<InboundMessage>, text: string, extra: Partial<InboundMessage> = {}) => adapter.ask(inbound({ ...where, ...extra, text, messageId: `c${++count}` }));
  /** Six long turns: enough for /compress to have a middle to fold. */
  const chatter = async (where: Partial<InboundMessage>, label: string) => {
    for (let turn = 1; turn <= 6; turn++) await say(where, `${label} ${turn}: ${"we talk about trains, hotels and the coast ".repeat(60)}`);
  };
  const mainRequests = () => llm.requests.filter((request) => !isSummarizerRequest(request) && !isFlush(request) && !isForgetRewrite(request));
  const lastMain = (): RecordedRequest => mainRequests().at(-1)!;

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.route(isForgetRewrite, forgetRewriter);
    // The summarizer keeps the code word (so /forget has to take it out of the summary).
    llm.route(isSummarizerRequest, () => ({ text: `## Goal\nPlan the trip. SUMMARY#${++summaries}\n## Critical Context\nThe code word is PAPAYA.\nTrain at 9.` }));
    llm.setHandler(memoryModel);
    pipeline = await startPipeline(testConfig({ LLM_BASE_URL: llm.url, LLM_CONTEXT_WINDOW: "128000" }), [adapter]);
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });

  it("/pin keeps a fact verbatim in every request, through 5 compactions; /unpin removes it", async () => {
    expect(await say(DM, `/pin ${PIN}`)).toMatch(/^Pinned \[p1\]/);
    for (let round = 1; round <= 5; round++) {
      await chatter(DM, `round ${round}`);
      expect(await say(DM, "/compress")).toMatch(/^Compacted: /);
      await say(DM, `after compaction ${round}`);
      expect(textOf(lastMain().body.messages[0]!.content)).toContain(`- [p1] ${PIN}`);
    }
    expect(await say(DM, "/status")).toMatch(/^Compactions: 5$/m);
    // A pin sent as a reply pins the replied-to text.
    expect(await say(DM, "/pin", { replyTo: { author: "Bo", text: "Hotel: Casa Azul, 3 nights" } })).toMatch(/^Pinned \[p2\]/);
    expect(await say(DM, "/unpin p1")).toBe(`Unpinned:\n• [p1] ${PIN}`);
    await say(DM, "and now?");
    const system = textOf(lastMain().body.messages[0]!.content);
    expect(system).not.toContain(PIN);
    expect(system).toContain("- [p2] Hotel: Casa Azul, 3 nights");
  });

  it("/context: categories that add up to the request the model received (±2%), compactions, and the last fold", async () => {
    await say(DM, "remember: prefers window seats");
    await say(DM, "/new");
    await say(DM, "/pin gate B12");
    await chatter(DM, "leg");
    await say(DM, "/compress");
    await say(DM, "what's next?");
    const request = lastMain();
    const text = await say(DM, "/context");
    const numbers = contextNumbers(text);
    expect(Object.keys(numbers)).toEqual(["system prompt", "tools", "memory", "pins", "summary", "recent messages", "free"]);
    for (const name of ["system prompt", "tools", "memory", "pins", "summary", "recent messages"]) expect(numbers[name]).toBeGreaterThan(0);
    const used = numbers["system prompt"]! + numbers.tools! + numbers.memory! + numbers.pins! + numbers.summary! + numbers["recent messages"]!;
    const sent = requestTokens(request);
    expect(Math.abs(used - sent) / sent).toBeLessThanOrEqual(0.02);
    expect(used + numbers.free!).toBe(128_000);
    expect(text).toMatch(/^Compactions: 1$/m);
    expect(text).toMatch(/^Last compaction \(manual, [^)]+\): folded \d+ messages from .+ to .+; ids m\d+…m\d+ — ask me to recall\("m\d+"\)/m);
  });

  it("/forget removes a fact from memory, from the summary and from the next request, and says what it removed", async () => {
    await say(DM, "remember: the code word is PAPAYA");
    await say(DM, "/new");
    await chatter(DM, "note");
    await say(DM, "/compress");
    await say(DM, "anything else?");
    expect(requestText(lastMain())).toContain("PAPAYA");

    const reply = await say(DM, "/forget papaya");
    expect(reply).toMatch(/^Forgot "papaya":\n• memory \[u\d+\]: the code word is PAPAYA\n• the summary of earlier turns, rewritten without it\n/);
    expect(llm.requests.filter(isForgetRewrite)).toHaveLength(1);
    await say(DM, "what is the code word?");
    const after = requestText(lastMain());
    expect(after.toLowerCase()).not.toContain("papaya");
    expect(after).toContain("Train at 9.");
    expect(await say(DM, "/memory")).not.toMatch(/papaya/i);
  });

  it("/memory shows and forgets by id; /memory share brings a user's memory into one group only", async () => {
    const shown = await say(DM, "/memory");
    expect(shown).toMatch(/^Your memory \(used only in our private chat unless you \/memory share it in a group\) · \d+\/2,000 characters:\n• \[u1\] prefers window seats$/m);
    await say(GROUP, "hello crew");
    expect(requestText(lastMain())).not.toContain("window seats");
    expect(await say(GROUP, "/memory share")).toMatch(/^Bo, your memory is now used in this chat too/);
    await say(GROUP, "/new");
    await say(GROUP, "where do I sit?");
    expect(textOf(lastMain().body.messages[0]!.content)).toContain("About Bo (shared by them with this chat):\n- [u1] prefers window seats");
    expect(await say(GROUP, "/memory unshare")).toMatch(/no longer used in this chat/);
    await say(GROUP, "/new");
    await say(GROUP, "where now?");
    expect(requestText(lastMain())).not.toContain("window seats");

    expect(await say(DM, "/memory forget u1")).toMatch(/^Removed from your user memory:\n• \[u1\] prefers window seats/);
    expect(await say(DM, "/memory")).toContain("(nothing yet");
  });

  it("consent takes effect at once (issue 29): share, unshare and forget change the group's next request without /new or a compaction", async () => {
    const ZOE_DM = { chatId: "dm-zoe", sessionKey: "console:dm-zoe", chatType: "private" as const, userId: "zoe", userName: "Zoe" };
    const ZOE_IN_GROUP = { chatId: "crew-2", sessionKey: "console:crew-2", chatType: "group" as const, userId: "zoe", userName: "Zoe" };
    const ALI_IN_GROUP = { ...ZOE_IN_GROUP, userId: "ali", userName: "Ali" };
    await say(ZOE_DM, "remember: is on sick leave until Friday");
    await say(ALI_IN_GROUP, "hello all");
    expect(requestText(lastMain())).not.toContain("sick leave");
    // Zoe shares: Ali's very next message is answered with it.
    expect(await say(ZOE_IN_GROUP, "/memory share")).toMatch(/now used in this chat too, from now on/);
    await say(ALI_IN_GROUP, "how is Zoe?");
    expect(requestText(lastMain())).toContain("About Zoe (shared by them with this chat):\n- [u1] is on sick leave until Friday");
    // Zoe unshares: gone from Ali's very next request, and /memory in the group agrees.
    expect(await say(ZOE_IN_GROUP, "/memory unshare")).toMatch(/no longer used in this chat, from now on/);
    await say(ALI_IN_GROUP, "and now?");
    expect(requestText(lastMain())).not.toContain("sick leave");
    expect(await say(ALI_IN_GROUP, "/memory")).not.toContain("shared it");
    // Shared again, then removed from her private chat: gone from her DM and the group at once.
    await say(ZOE_IN_GROUP, "/memory share");
    await say(ALI_IN_GROUP, "again?");
    expect(requestText(lastMain())).toContain("sick leave");
    expect(await say(ZOE_DM, "/memory forget u1")).toMatch(/left my memory here and in the groups you share it with/);
    await say(ZOE_DM, "anything about me?");
    // Her own conversation still holds the message she wrote; her memory block does not.
    expect(textOf(lastMain().body.messages[0]!.content)).not.toContain("sick leave");
    await say(ALI_IN_GROUP, "and Zoe?");
    expect(requestText(lastMain())).not.toContain("sick leave");
  });

  it("a fact shared into a group is not copied into the group's own memory, and a copy leaves with the share (issue 29)", async () => {
    const MIA_DM = { chatId: "dm-mia", sessionKey: "console:dm-mia", chatType: "private" as const, userId: "mia", userName: "Mia" };
    const MIA_IN_GROUP = { chatId: "crew-3", sessionKey: "console:crew-3", chatType: "group" as const, userId: "mia", userName: "Mia" };
    const TOM_IN_GROUP = { ...MIA_IN_GROUP, userId: "tom", userName: "Tom" };
    // Mia: a private fact, shared with the group.
    await say(MIA_DM, "remember: Mia is on sick leave until Friday");
    await say(MIA_IN_GROUP, "/memory share");
    // Tom (or text planted in the group) asks the model to keep it for the group: the tool refuses.
    const refused = await say(TOM_IN_GROUP, "remember: Mia on sick leave, back Friday");
    expect(refused).toMatch(/Mia's own memory, shared with this chat while they allow it; it is not copied/);
    // The group's own facts are still written.
    expect(await say(TOM_IN_GROUP, "remember: the team meets on Mondays")).toMatch(/Saved \[c1\] to this chat's memory/);
    const group = await say(TOM_IN_GROUP, "/memory");
    expect(group).toContain("[c1] the team meets on Mondays");
    expect(group).not.toContain("sick leave");

    // A copy written while nothing was shared (or before copies were refused) leaves with the share.
    await say(MIA_IN_GROUP, "/memory unshare");
    await say(TOM_IN_GROUP, "remember: Mia is on sick leave until Friday, says Tom");
    expect(await say(TOM_IN_GROUP, "/memory")).toContain("sick leave");
    await say(MIA_IN_GROUP, "/memory share");
    expect(await say(MIA_IN_GROUP, "/memory unshare")).toMatch(/no longer used in this chat/);
    // Tom's view: the group's memory and his very next request no longer carry it; the group's own fact stays.
    const after = await say(TOM_IN_GROUP, "/memory");
    expect(after).not.toContain("sick leave");
    expect(after).toContain("the team meets on Mondays");
    await say(TOM_IN_GROUP, "how is the team?");
    expect(textOf(lastMain().body.messages[0]!.content)).not.toContain("sick leave");
    expect(textOf(lastMain().body.messages[0]!.content)).toContain("the team meets on Mondays");
    // Mia's view: her own memory is untouched.
    expect(await say(MIA_DM, "/memory")).toContain("Mia is on sick leave until Friday");

    // Forgetting the fact in her private chat removes a group copy too.
    await say(TOM_IN_GROUP, "remember: Mia is on sick leave until Friday");
    await say(MIA_IN_GROUP, "/memory share");
    expect(await say(MIA_DM, "/memory forget sick leave")).toMatch(/left my memory here and in the groups you share it with/);
    expect(await say(TOM_IN_GROUP, "/memory")).not.toContain("sick leave");
    await say(TOM_IN_GROUP, "anything new?");
    expect(requestText(lastMain())).not.toMatch(/\[c\d+\] Mia is on sick leave/);
  });
});
