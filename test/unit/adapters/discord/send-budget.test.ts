import { REST, Routes } from "discord.js";
import { describe, expect, it } from "vitest";
import { budgetedRestOptions, PROCESS_REQUESTS_PER_SECOND, SecondWindows, SendBudgetRefusal } from "../../../../src/adapters/discord/send-budget.js";
import type { SendBudget } from "../../../../src/core/send-budget.js";

/** A budget with no tokens left for anything below a final (as under load): typing and previews refused, finals granted. */
const lowBudget: SendBudget = {
  take: (request) => Promise.resolve(request.priority === "final" ? { granted: true, delayMs: 0 } : { granted: false, waitMs: 1_000 }),
  penalize: () => Promise.resolve(),
};

const channelId = (index: number) => String(310_000_000_000_000_000n + BigInt(index));

describe("discord: the send budget as discord.js's request hook", () => {
  it("requests the budget refuses use up none of the 50 a second: a final after 80 refused typing calls goes at once", async () => {
    const sent: string[] = [];
    const rest = new REST({
      api: "http://127.0.0.1:9/api",
      ...budgetedRestOptions({
        budget: () => lowBudget, bot: () => "1", perSecond: 45,
        makeRequest: (url) => {
          sent.push(new URL(url).pathname);
          return Promise.resolve(new Response(JSON.stringify({ id: "900" }), { status: 200, headers: { "content-type": "application/json" } }));
        },
      }),
    }).setToken("fake-token");
    // discord.js holds every request for its own global limit once it counted 50 in a second.
    const heldGlobally: unknown[] = [];
    rest.on("rateLimited", (info) => {
      if (info.global) heldGlobally.push(info);
    });

    // The typing loops of 80 channels tick at once; each call is refused.
    const refused = await Promise.all(Array.from({ length: 80 }, (_, index) => rest.post(Routes.channelTyping(channelId(index))).catch((error: unknown) => error)));
    expect(refused.filter((error) => !(error instanceof SendBudgetRefusal))).toEqual([]);
    await rest.post(Routes.channelMessages(channelId(100)), { body: { content: "the answer" } });

    expect(sent).toEqual([`/api/v10/channels/${channelId(100)}/messages`]);
    expect(heldGlobally).toEqual([]);
  });

  it("sends at most 50 requests in a one-second window, counted when they go", () => {
    let now = 10_000;
    const windows = new SecondWindows(PROCESS_REQUESTS_PER_SECOND, () => now);
    const waits = Array.from({ length: PROCESS_REQUESTS_PER_SECOND + 1 }, () => windows.take());
    expect(waits.slice(0, PROCESS_REQUESTS_PER_SECOND).every((wait) => wait === 0)).toBe(true);
    expect(waits[PROCESS_REQUESTS_PER_SECOND]).toBe(1_000);
    now += 400;
    expect(windows.take()).toBe(600);
    now += 600;
    expect(windows.take()).toBe(0);
  });

  it("counts any one second, not fixed windows: 25 late in one second and 50 early in the next are not let through", () => {
    let now = 10_000;
    const windows = new SecondWindows(PROCESS_REQUESTS_PER_SECOND, () => now);
    expect(windows.take()).toBe(0);
    now = 10_900;
    expect(Array.from({ length: 25 }, () => windows.take()).every((wait) => wait === 0)).toBe(true);
    // A second after the first request: it no longer counts, the 25 of 100 ms ago still do.
    now = 11_000;
    const waits = Array.from({ length: PROCESS_REQUESTS_PER_SECOND }, () => windows.take());
    expect(waits.filter((wait) => wait === 0)).toHaveLength(PROCESS_REQUESTS_PER_SECOND - 25);
    expect(waits.at(-1)).toBe(900);
  });
});
