import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bySystemPrompt, echo, parseStamp, startFakeLlm, type FakeLlm, type RecordedRequest } from "../../fakes/fake-llm.js";
import { summarizerHandler } from "../../fakes/fake-summarizer.js";

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

  it("echoes a user message without its leading time stamp, and reads the stamp by its own pattern", async () => {
    const stamped = "[Fri 2026-12-04 10:44 Europe/Berlin · 3 days after the previous message] Bob: ship it";
    expect(parseStamp(stamped)).toEqual({ weekday: "Fri", date: "2026-12-04", time: "10:44", zone: "Europe/Berlin", gap: { amount: 3, unit: "day" }, rest: "Bob: ship it" });
    expect(parseStamp("[Tue 2026-12-01 09:05 America/Argentina/Buenos_Aires] hi")).toMatchObject({ zone: "America/Argentina/Buenos_Aires", rest: "hi" });
    // Not the documented format: echoed as typed.
    for (const text of ["[Tue 2026-12-01] hi", "[note] hi", "hi [Tue 2026-12-01 10:44 UTC] ", "[Tue 2026-12-01 25:00 UTC] hi"]) expect(parseStamp(text)).toBeUndefined();
    const response = await post(chat(stamped));
    expect(await replyText(response)).toBe("echo: Bob: ship it");
    expect(fake.requests[0]?.body.messages[1]).toEqual({ role: "user", content: stamped });
  });
});

describe("fake LLM with its own token unit", () => {
  const body = (chars: number, extra: Record<string, unknown> = {}) => ({ model: "m", messages: [{ role: "user", content: "x".repeat(chars) }], ...extra });
  const postTo = (llm: FakeLlm, payload: unknown) =>
    fetch(`${llm.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(payload) });

  it("reports prompt and completion tokens as its own count × the ratio, streamed or not", async () => {
    const own = await startFakeLlm();
    const skewed = await startFakeLlm({ tokenRatio: 1.3 });
    try {
      own.setHandler(() => "y".repeat(400));
      skewed.setHandler(() => "y".repeat(400));
      // 3,982 characters + 16 of framing + "[]" of tools = 4,000 → 1,000 of its own tokens; the reply 400 → 100.
      const plain = (await (await postTo(own, body(3_982))).json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
      const scaled = (await (await postTo(skewed, body(3_982))).json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
      expect(plain.usage).toMatchObject({ prompt_tokens: 1_000, completion_tokens: 100 });
      expect(scaled.usage).toMatchObject({ prompt_tokens: 1_300, completion_tokens: 130 });
      expect(skewed.promptTokens(skewed.requests[0]!)).toBe(1_300);
      // The summarizer path: the summary model writes, the server counts the prompt.
      skewed.route((request) => request.body.messages[0]?.role === "system", summarizerHandler());
      const summary = (await (await postTo(skewed, { model: "m", messages: [{ role: "system", content: "Summarize." }, { role: "user", content: "x".repeat(3_956) }] })).json()) as { usage: { prompt_tokens: number } };
      expect(summary.usage.prompt_tokens).toBe(1_300);
      const streamed = await (await postTo(skewed, body(3_982, { stream: true, stream_options: { include_usage: true } }))).text();
      const usage = streamed.split("\n\n").filter((block) => block.startsWith("data: {")).map((block) => JSON.parse(block.slice(6)) as { usage?: unknown }).at(-1)?.usage;
      expect(usage).toMatchObject({ prompt_tokens: 1_300, completion_tokens: 130 });
    } finally {
      await own.close();
      await skewed.close();
    }
  });

  it("refuses a request whose prompt plus max_tokens exceeds its window, in the provider's own words, before any handler", async () => {
    const openai = await startFakeLlm({ tokenRatio: 1.3, contextWindow: 2_000 });
    const anthropic = await startFakeLlm({ tokenRatio: 1.3, contextWindow: 2_000, rules: "anthropic" });
    try {
      let handled = 0;
      openai.setHandler((request: RecordedRequest) => (handled++, echo(request)));
      // 1,000 own tokens × 1.3 = 1,300: fits alone, not with 800 more for the answer.
      expect((await postTo(openai, body(3_982))).status).toBe(200);
      const refused = await postTo(openai, body(3_982, { max_tokens: 800 }));
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: { code: "context_length_exceeded", message: expect.stringContaining("you requested 2100 tokens (1300 in the messages, 800 in the completion)") } });
      // 1,600 own tokens × 1.3 = 2,080 > 2,000 without any max_tokens; 1,600 alone would have fitted.
      expect((await postTo(openai, body(6_382))).status).toBe(400);
      expect(openai.overWindow).toEqual([1, 2]);
      expect(handled).toBe(1);
      const tooLong = await postTo(anthropic, body(6_382));
      expect(await tooLong.json()).toEqual({ type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 2080 tokens > 2000 maximum" } });
    } finally {
      await openai.close();
      await anthropic.close();
    }
  });
});
