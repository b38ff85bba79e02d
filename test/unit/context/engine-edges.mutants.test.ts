/**
 * Behaviour at the edges of the context engine's small pieces, written against the mutants
 * StrykerJS left alive (`npm run mutation`, docs/benchmarks.md "Mutation testing"): every case
 * here is a behaviour the engine relies on — a secret shape that must not reach a summary, an
 * error that must (or must not) read as a context overflow, a breakpoint Anthropic must get, a
 * boundary of the anti-thrash and calibration rules, a picture's cost, a turn for the dropping
 * fallback.
 */
import { describe, expect, it } from "vitest";
import type { ApiMessage } from "../../../src/core/messages.js";
import type { ChatMessage } from "../../../src/core/messages.js";
import { assemble, chooseSummaryRole, COMPACTION_NOTE, extractSummaryText, sanitizeToolPairs, summaryMessageContent } from "../../../src/context/assemble.js";
import { headEndOf } from "../../../src/context/boundaries.js";
import { applyPromptCaching } from "../../../src/context/caching.js";
import { initialCalibration, MIN_ESTIMATE_FOR_CALIBRATION, TRUNCATION_SUSPICION_RATIO, updateCalibration } from "../../../src/context/calibration.js";
import { recordCompactionOutcome } from "../../../src/context/decisions.js";
import { imageTokens, UNKNOWN_SIZE_IMAGE_TOKENS } from "../../../src/context/image-tokens.js";
import { groupMessages, groupTurns, hasToolCalls, lastIndexWhere, toolCallsById } from "../../../src/context/message-groups.js";
import { detectContextOverflow } from "../../../src/context/overflow.js";
import { REDACTED, redactSecrets } from "../../../src/context/redact.js";

describe("secrets never reach a summary: every documented shape is removed whole", () => {
  const cases: Array<[string, string]> = [
    ["an OpenAI key without a prefix word", "key sk-abcdefghijklmnopqrstuvwxyz0123 here"],
    ["an Anthropic key", "key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123 here"],
    ["a fine-grained GitHub token", `key github_pat_${"A1b2C3d4E5".repeat(6)} here`],
    ["a Slack bot token", "key xoxb-1234567890-abcdefghij here"],
    ["a Google API key", `key AIza${"Sy0123456789abcdefghijklmnopqrstuvw".slice(0, 35)} here`],
    ["a JSON web token", "key eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U here"],
    ["a Stripe live key", "key sk_live_4eC39HqLyjWDarjtT1zdp7dc here"],
  ];
  it.each(cases)("%s", (_label, text) => {
    expect(redactSecrets(text)).toBe(`key ${REDACTED} here`);
  });

  it("PEM private keys with or without a type word, and one cut off before its END line", () => {
    const body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7";
    expect(redactSecrets(`before\n-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\nafter`)).toBe(`before\n${REDACTED}\nafter`);
    expect(redactSecrets(`before\n-----BEGIN RSA PRIVATE KEY-----\n${body}\n-----END RSA PRIVATE KEY-----\nafter`)).toBe(`before\n${REDACTED}\nafter`);
    // A paste that stops mid-key: everything from BEGIN on goes.
    expect(redactSecrets(`before\n-----BEGIN OPENSSH PRIVATE KEY-----\n${body}`)).toBe(`before\n${REDACTED}`);
  });

  it("bearer tokens and password sentences, however the spacing", () => {
    expect(redactSecrets("Authorization: Bearer  abcdefghijklmnop1234")).toBe(`Authorization: Bearer  ${REDACTED}`);
    expect(redactSecrets("my password  is  hunter22")).toBe(`my password  is  ${REDACTED}`);
  });

  it("the value after every secret-ish key spelling, the key kept", () => {
    for (const key of ["pass", "passwd", "passphrase", "pwd", "secret", "clientsecret", "client-secret", "client_secret", "apikey", "api-key", "api_key", "accesstoken", "access-token", "authtoken", "auth_token", "refreshtoken", "refresh-token", "token", "privatekey", "private_key"]) {
      expect(redactSecrets(`${key}: hunter22 ok`), key).toBe(`${key}: ${REDACTED} ok`);
    }
  });

  it("a value that only ends in a known key shape goes whole, not just its tail", () => {
    expect(redactSecrets("token=abc.sk-abcdefghijklmnopqrstuvwxyz0123")).toBe(`token=${REDACTED}`);
  });
});

describe("what reads as a context overflow", () => {
  it("llama.cpp's error type alone, and OpenAI's code alone, whatever the words", () => {
    expect(detectContextOverflow({ status: 400, type: "exceed_context_size_error", message: "bad request" })).toEqual({ overflow: true });
    expect(detectContextOverflow({ status: 400, code: "context_length_exceeded", message: "" })).toEqual({ overflow: true });
  });

  it("not another error that carries a code, even a string one", () => {
    expect(detectContextOverflow({ status: 400, code: "invalid_api_key", type: "invalid_request_error", message: "Incorrect API key provided" })).toEqual({ overflow: false });
    expect(detectContextOverflow({ status: 429, code: "rate_limit_exceeded", message: "Rate limit reached for requests" })).toEqual({ overflow: false });
  });

  it("the words count with a 400, 413, 422 or no status, never with a 429 or 5xx", () => {
    const message = "This model's maximum context length is 8192 tokens.";
    for (const status of [undefined, 400, 413, 422]) expect(detectContextOverflow({ ...(status === undefined ? {} : { status }), message }), String(status)).toEqual({ overflow: true, contextWindow: 8192 });
    for (const status of [429, 500, 503]) expect(detectContextOverflow({ status, message }), String(status)).toEqual({ overflow: false });
  });

  it("reads the words from the raw body when the message is empty (vLLM's flat body)", () => {
    expect(detectContextOverflow({ status: 400, message: "", body: '{"object":"error","message":"This model\'s maximum context length is 4096 tokens."}' })).toEqual({ overflow: true, contextWindow: 4096 });
  });

  it("a window too small to be real is not learned", () => {
    expect(detectContextOverflow({ status: 400, message: "This model's maximum context length is 255 tokens." })).toEqual({ overflow: true });
    expect(detectContextOverflow({ status: 400, message: "This model's maximum context length is 256 tokens." })).toEqual({ overflow: true, contextWindow: 256 });
  });

  it("llama.cpp's n_ctx however it is written, and context phrases with separators", () => {
    for (const body of ['{"n_ctx": 4096}', "n_ctx: 4096", "n_ctx = 4096"]) {
      expect(detectContextOverflow({ status: 400, type: "exceed_context_size_error", message: "", body }), body).toEqual({ overflow: true, contextWindow: 4096 });
    }
    for (const message of ["context length exceeded", "context_length_exceeded by 10 tokens", "context-window exceeds the limit", "contextsize is exceeded"]) {
      expect(detectContextOverflow({ status: 400, message }).overflow, message).toBe(true);
    }
    expect(detectContextOverflow({ status: 400, message: "prompt is too long: 1 token > 200000 maximum" })).toEqual({ overflow: true, contextWindow: 200_000 });
    expect(detectContextOverflow({ status: 400, message: "request (5000 tokens) exceeds the available context size (4096 token)" }).contextWindow).toBe(4096);
  });
});

describe("Anthropic cache breakpoints: the system prompt and the last 3 messages that can carry one", () => {
  const model = "anthropic/claude-sonnet-4.5";
  const marked = (messages: ApiMessage[]) =>
    applyPromptCaching(messages, { model, sessionId: "s" }).messages.flatMap((message, index) => (Array.isArray(message.content) ? [index] : []));

  it("no more than four, on text parts of the exact shape", () => {
    const messages: ApiMessage[] = [{ role: "system", content: "sys" }, ...Array.from({ length: 8 }, (_, index): ApiMessage => ({ role: index % 2 ? "assistant" : "user", content: `m${index}` }))];
    expect(marked(messages)).toEqual([0, 6, 7, 8]);
    expect(applyPromptCaching(messages, { model, sessionId: "s" }).messages[8]!.content).toEqual([{ type: "text", text: "m7", cache_control: { type: "ephemeral" } }]);
  });

  it("none on a first message that is not the system prompt, or on empty content", () => {
    const noSystem: ApiMessage[] = Array.from({ length: 5 }, (_, index): ApiMessage => ({ role: index % 2 ? "assistant" : "user", content: `m${index}` }));
    expect(marked(noSystem)).toEqual([2, 3, 4]);
    const emptySystem: ApiMessage[] = [{ role: "system", content: "" }, { role: "user", content: "hi" }];
    expect(marked(emptySystem)).toEqual([1]);
    const withCalls: ApiMessage[] = [
      { role: "system", content: "sys" }, { role: "user", content: "a" }, { role: "assistant", content: "b" }, { role: "user", content: "c" },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: "result" },
    ];
    // The assistant message that only calls a tool cannot carry one: the next earlier message takes it.
    expect(marked(withCalls)).toEqual([0, 2, 3, 5]);
  });
});

describe("edges of the anti-thrash and calibration rules", () => {
  it("a compaction that ends at 85% of the threshold or over did not help (issue #31: fixed overhead)", () => {
    expect(recordCompactionOutcome({ ineffective: 1 }, { tokensAfter: 850, thresholdTokens: 1_000 })).toEqual({ ineffective: 2, suspendedAtTokens: 850 });
    expect(recordCompactionOutcome({ ineffective: 1 }, { tokensAfter: 849, thresholdTokens: 1_000 })).toEqual({ ineffective: 0 });
  });

  it("a sample is used from the minimum size on, and never with a non-positive or non-finite count", () => {
    const at = (estimatedTokens: number, reportedPromptTokens: number) => updateCalibration(initialCalibration(), { estimatedTokens, reportedPromptTokens });
    expect(at(MIN_ESTIMATE_FOR_CALIBRATION, MIN_ESTIMATE_FOR_CALIBRATION * 1.25).state).toEqual({ ratio: 1.25, samples: 1 });
    expect(at(MIN_ESTIMATE_FOR_CALIBRATION - 1, 100).state).toEqual(initialCalibration());
    for (const [estimated, reported] of [[1_000, 0], [1_000, Number.NaN], [Number.POSITIVE_INFINITY, 1_000], [Number.NaN, 1_000], [1_000, Number.POSITIVE_INFINITY]] as const) {
      const update = at(estimated, reported);
      expect(update, `${estimated}/${reported}`).toEqual({ state: initialCalibration(), observedRatio: undefined, suspectedTruncation: false });
    }
  });

  it("exactly the suspicion ratio is a tokenizer difference, below it a truncation", () => {
    const at = (ratio: number) => updateCalibration(initialCalibration(), { estimatedTokens: 10_000, reportedPromptTokens: 10_000 * ratio });
    expect(at(TRUNCATION_SUSPICION_RATIO)).toMatchObject({ suspectedTruncation: false, state: { ratio: TRUNCATION_SUSPICION_RATIO, samples: 1 } });
    expect(at(TRUNCATION_SUSPICION_RATIO - 0.01)).toMatchObject({ suspectedTruncation: true, state: initialCalibration() });
  });
});

describe("what a picture costs (OpenAI's tile formula)", () => {
  it("an unknown or impossible size costs a 1024×1024 picture", () => {
    for (const [width, height] of [[0, 600], [800, 0], [undefined, 600], [800, undefined], [-5, 600], [800, -5]] as const) {
      expect(imageTokens(width, height), `${width}×${height}`).toBe(UNKNOWN_SIZE_IMAGE_TOKENS);
    }
  });

  it("a wide picture is first fitted into 2048×2048, then its short side to 768", () => {
    // 4096×1024 → 2048×512 (fits) → short side 512 < 768: 4 × 1 tiles.
    expect(imageTokens(4096, 1024)).toBe(170 * 4 + 85);
    // 1024×4096 the same, turned.
    expect(imageTokens(1024, 4096)).toBe(170 * 4 + 85);
    // 2000×1000 fits already; short side 1000 → 768: 1536×768 → 3 × 2 tiles.
    expect(imageTokens(2000, 1000)).toBe(170 * 6 + 85);
  });
});

describe("message groups and turns, as compaction moves them", () => {
  const call = (id: string) => ({ id, type: "function" as const, function: { name: "t", arguments: "{}" } });
  const messages: ChatMessage[] = [
    { id: "s", role: "system", content: "sys" },
    { id: "u1", role: "user", content: "a" },
    { id: "a1", role: "assistant", content: null, tool_calls: [call("c1")] },
    { id: "t1", role: "tool", tool_call_id: "c1", content: "r" },
    { id: "a2", role: "assistant", content: "done" },
    { id: "u2", role: "user", content: "b" },
    { id: "a3", role: "assistant", content: "", tool_calls: [] },
    { id: "u3", role: "user", content: "c" },
  ];

  it("an assistant message with an empty tool_calls list is a plain message, not a group", () => {
    expect(hasToolCalls(messages[6]!)).toBe(false);
    expect(hasToolCalls({ id: "x", role: "user", content: "hi" })).toBe(false);
    expect(groupMessages(messages)).toEqual([{ start: 0, end: 1 }, { start: 1, end: 2 }, { start: 2, end: 4 }, { start: 4, end: 5 }, { start: 5, end: 6 }, { start: 6, end: 7 }, { start: 7, end: 8 }]);
  });

  it("turns start at user messages and end at the range's end", () => {
    expect(groupTurns(messages, 1, 8)).toEqual([{ start: 1, end: 5 }, { start: 5, end: 7 }, { start: 7, end: 8 }]);
    // What comes before the first user message is a turn of its own; an empty range has none.
    expect(groupTurns(messages, 2, 6)).toEqual([{ start: 2, end: 5 }, { start: 5, end: 6 }]);
    expect(groupTurns(messages, 3, 3)).toEqual([]);
  });

  it("finds tool calls only on assistant messages, and the last match down to the first message", () => {
    expect([...toolCallsById(messages).keys()]).toEqual(["c1"]);
    expect(lastIndexWhere(messages, (message) => message.role === "system")).toBe(0);
    expect(lastIndexWhere(messages, (message) => message.role === "developer" as never)).toBe(-1);
  });
});

describe("the summary message and the head around it", () => {
  const user = (id: string): ChatMessage => ({ id, role: "user", content: `u ${id}` });
  const reply = (id: string): ChatMessage => ({ id, role: "assistant", content: `a ${id}` });

  it("the bare summary comes back out of its frame, and text without the frame only loses its outer whitespace", () => {
    expect(extractSummaryText(`  ${summaryMessageContent("\n## Goal\nship it\n")}  `)).toBe("## Goal\nship it");
    expect(extractSummaryText("  ## Goal\nno frame here  ")).toBe("## Goal\nno frame here");
  });

  it("the summary's role alternates with what surrounds it", () => {
    expect(chooseSummaryRole(user("u1"), user("u2"))).toBe("assistant");
    expect(chooseSummaryRole(user("u1"), undefined)).toBe("assistant");
    expect(chooseSummaryRole(undefined, user("u2"))).toBe("user");
    expect(chooseSummaryRole(reply("a1"), user("u2"))).toBe("user");
  });

  it("assemble takes the role from the last head message, notes only the system prompt, and adds no empty time", () => {
    const system: ChatMessage = { id: "s", role: "system", content: "sys" };
    const head = [system, user("u1"), reply("a1")];
    const messages = assemble({ head, summary: { id: "sum", text: "## Goal\nx" }, kept: [user("u2")], addNote: true });
    expect(messages.map((message) => message.role)).toEqual(["system", "user", "assistant", "user", "user"]);
    expect(messages[0]!.content).toBe(`sys\n\n${COMPACTION_NOTE}`);
    expect(messages[1]).toBe(head[1]);
    expect(messages[3]).not.toHaveProperty("at");
    expect(assemble({ head, summary: { id: "sum", text: "x", at: 5 }, kept: [], addNote: false })[3]).toMatchObject({ at: 5, kind: "summary" });
    expect(assemble({ head, kept: [], addNote: false })[0]).toBe(system);
  });

  it("a stub result for a lost tool result is never empty (Anthropic refuses empty content)", () => {
    const call = { id: "c1", type: "function" as const, function: { name: "t", arguments: "{}" } };
    const repaired = sanitizeToolPairs([user("u1"), { id: "a", role: "assistant", content: null, tool_calls: [call] }, user("u2")], () => "stub1");
    expect(repaired.stubs).toHaveLength(1);
    expect(repaired.stubs[0]!.content.trim()).not.toBe("");
    expect(repaired.messages.map((message) => message.id)).toEqual(["u1", "a", "stub1", "u2"]);
  });
});

describe("where the head ends", () => {
  it("without a system prompt, at the first exchange; a reply that is not the assistant's is not part of it", () => {
    expect(headEndOf([{ id: "u", role: "user", content: "hi" }, { id: "a", role: "assistant", content: "hello" }, { id: "u2", role: "user", content: "next" }], true)).toBe(2);
    expect(headEndOf([{ id: "s", role: "system", content: "s" }, { id: "u", role: "user", content: "hi" }, { id: "u2", role: "user", content: "more" }], true)).toBe(2);
    expect(headEndOf([{ id: "s", role: "system", content: "s" }, { id: "a", role: "assistant", content: "greeting" }, { id: "u", role: "user", content: "hi" }], true)).toBe(1);
    expect(headEndOf([], true)).toBe(0);
  });
});
