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
