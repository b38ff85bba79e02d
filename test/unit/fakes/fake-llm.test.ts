import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bySystemPrompt, startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";

let fake: FakeLlm;
beforeEach(async () => {
  fake = await startFakeLlm();
});
afterEach(async () => {
  await fake.close();
});

const post = (body: unknown, signal?: AbortSignal) =>
  fetch(`${fake.url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer k" },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });

const chat = (content: string, systemPrompt = "You are a bot.") => ({
  model: "m",
  messages: [{ role: "system", content: systemPrompt }, { role: "user", content }],
});

const replyText = async (response: Response): Promise<unknown> => {
  const body = (await response.json()) as { choices: Array<{ message: { content: unknown } }> };
  return body.choices[0]?.message.content;
};

describe("fake LLM", () => {
  it("echoes the last user message with estimated usage and records the request", async () => {
    const response = await post(chat("hello there"));
    const body = (await response.json()) as { choices: Array<{ message: { content: string } }>; usage: Record<string, unknown> };

    expect(body.choices[0]?.message.content).toBe("echo: hello there");
    expect(body.usage).toEqual({ prompt_tokens: 15, completion_tokens: 5, total_tokens: 20 });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]?.body.messages[1]).toEqual({ role: "user", content: "hello there" });
    expect(fake.requests[0]?.headers.authorization).toBe("Bearer k");
  });

  it("answers routes first, then the queue, then the default handler", async () => {
    const unroute = fake.route(bySystemPrompt(/summar/i), "a summary");
    fake.enqueue("first", { text: "second" });
    fake.setHandler(() => "default");

    expect(await replyText(await post(chat("x", "You summarize.")))).toBe("a summary");
    expect(await replyText(await post(chat("x")))).toBe("first");
    expect(await replyText(await post(chat("x")))).toBe("second");
    expect(await replyText(await post(chat("x")))).toBe("default");
    unroute();
    expect(await replyText(await post(chat("x", "You summarize.")))).toBe("default");
  });

  it("holds requests until the gate is released", async () => {
    const gate = fake.hold();
    const pending = [post(chat("a")), post(chat("b"))];
    const arrived = await fake.waitForRequests(2);
    expect(arrived.map((request) => request.body.messages[1]?.content)).toEqual(["a", "b"]);

    let answered = false;
    void Promise.all(pending).then(() => (answered = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(answered).toBe(false);

    gate.release();
    const replies = await Promise.all(pending.map(async (response) => replyText(await response)));
    expect(replies).toEqual(["echo: a", "echo: b"]);
  });

  it("lets a held or hanging client disconnect, and closes with requests still open", async () => {
    fake.hold();
    const controller = new AbortController();
    const held = post(chat("a"), controller.signal).catch((error: unknown) => error);
    await fake.waitForRequests(1);
    controller.abort();
    expect(await held).toBeInstanceOf(Error);

    fake.hold().release();
    fake.enqueue({ hang: true });
    const hanging = post(chat("b")).catch((error: unknown) => error);
    await fake.waitForRequests(2);
    await fake.close();
    expect(await hanging).toBeInstanceOf(Error);
    fake = await startFakeLlm();
  });

  it("sends scripted HTTP errors with their headers, after a delay", async () => {
    fake.enqueue({ status: 429, headers: { "retry-after": "1" }, body: { error: { message: "slow down" } }, delayMs: 100 });
    const started = Date.now();

    const response = await post(chat("x"));

    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("1");
    expect(await response.json()).toEqual({ error: { message: "slow down" } });
  });

  it("times out waiting for requests that never come", async () => {
    await post(chat("x"));
    await expect(fake.waitForRequests(5, 50)).rejects.toThrow("1 of 5 requests");
  });

  it("streams as server-sent events: text chunks, tool call pieces, finish, usage last, [DONE]", async () => {
    fake.enqueue({ text: "Hello brave new world", toolCalls: [{ name: "get_weather", arguments: { city: "Paris, France" }, id: "c1" }], usage: { prompt_tokens: 9, completion_tokens: 4 } });
    const response = await post({ ...chat("x"), stream: true, stream_options: { include_usage: true } });
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const events = (await response.text()).split("\n\n").filter((block) => block.startsWith("data: ")).map((block) => block.slice(6));
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((raw) => JSON.parse(raw) as { choices: Array<{ delta: { content?: string; tool_calls?: Array<{ index: number; id?: string; function: { name?: string; arguments?: string } }> }; finish_reason: string | null }>; usage?: unknown });
    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("");
    expect(text).toBe("Hello brave new world");
    // One chunk per word, words over 4 characters cut: "Hello" → "Hell", "o".
    expect(chunks.filter((chunk) => chunk.choices[0]?.delta.content).map((chunk) => chunk.choices[0]?.delta.content)).toEqual(["Hell", "o", " bra", "ve", " new", " wor", "ld"]);
    const args = chunks.flatMap((chunk) => chunk.choices[0]?.delta.tool_calls ?? []).map((call) => call.function.arguments ?? "").join("");
    expect(JSON.parse(args)).toEqual({ city: "Paris, France" });
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("tool_calls");
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 } });
  });

  it("leaves the usage out of a stream that did not ask for it, paces chunks and can drop the connection mid-answer", async () => {
    fake.enqueue({ text: "one two three four", tokensPerSecond: 50 });
    const started = Date.now();
    const paced = await (await post({ ...chat("x"), stream: true })).text();
    expect(Date.now() - started).toBeGreaterThanOrEqual(70);
    expect(paced).not.toContain("usage");

    fake.enqueue({ text: "one two three four", dropAfterTokens: 2 });
    const dropped = post({ ...chat("x"), stream: true }).then((response) => response.text());
    await expect(dropped).rejects.toThrow();
    expect(fake.streamedChunks.get(1)).toBe(2);
  });
});
