/**
 * A fake main model that uses the memory tool the way a model would: "remember: <fact>" makes
 * it call memory add, and the tool's answer makes it say so. Everything else gets "ok".
 */
import { lastUserText, textOf, type FakeHandler, type RecordedRequest } from "../fakes/fake-llm.js";

/** The user's words without the group speaker prefix ("Ada: "). */
const words = (request: RecordedRequest) => lastUserText(request).replace(/^[^:\n]{1,40}: (?=remember:)/, "");

export const memoryModel: FakeHandler = (request) => {
  const last = request.body.messages.at(-1);
  if (last?.role === "tool") return { text: `noted (${textOf(last.content).slice(0, 200)})` };
  const text = words(request);
  if (text.startsWith("remember: ")) return { toolCalls: [{ name: "memory", arguments: { action: "add", text: text.slice("remember: ".length) } }] };
  return { text: "ok" };
};

/** Everything a request carries, as one string (system prompt, messages, tool results). */
export const requestText = (request: RecordedRequest) => request.body.messages.map((message) => textOf(message.content)).join("\n");

/** The request's last message: the flush instruction (src/memory/flush.ts) for a flush step. */
export const isFlush = (request: RecordedRequest) => textOf(request.body.messages.at(-1)?.content).startsWith("[Automatic memory flush");

/** The `/forget` re-summarization (src/memory/service.ts FORGET_PROMPT). */
export const isForgetRewrite = (request: RecordedRequest) => textOf(request.body.messages[0]?.content).startsWith("You edit a conversation summary");

/** A summarizer that does what /forget asks: drops every line mentioning the text. */
export const forgetRewriter: FakeHandler = (request) => {
  const prompt = textOf(request.body.messages[1]?.content);
  const forget = /<forget>([\s\S]*?)<\/forget>/.exec(prompt)?.[1] ?? "";
  const summary = /<summary>\n([\s\S]*?)\n<\/summary>/.exec(prompt)?.[1] ?? "";
  return { text: summary.split("\n").filter((line) => !line.toLowerCase().includes(forget.toLowerCase())).join("\n") };
};

/** `/context` lines "• name (n): 1,234" → { name: 1234 }. */
export function contextNumbers(text: string): Record<string, number> {
  const numbers: Record<string, number> = {};
  for (const match of text.matchAll(/^• ([a-z ]+?)(?: \(\d+\))?: ([\d,]+)$/gm)) numbers[match[1]!] = Number(match[2]!.replaceAll(",", ""));
  return numbers;
}
