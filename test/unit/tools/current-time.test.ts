/**
 * `current_time` answers in the chat's zone when the model names none (a chat that set
 * /timezone Asia/Tokyo gets Tokyo's wall time), and in the zone it names otherwise. Expected
 * wall times by arithmetic: Asia/Tokyo is UTC+9, America/Sao_Paulo UTC−3 (no DST since 2019).
 */
import { describe, expect, it } from "vitest";
import { currentTimeTool } from "../../../src/tools/builtin/current-time.js";
import type { ToolContext } from "../../../src/tools/registry.js";

const NOW = Date.parse("2026-12-01T22:40:05Z");
/** The answer's lines (current_time answers in text). */
const lines = async (args: Record<string, unknown>, timeZone?: string) => String(await currentTimeTool.run(args, context(timeZone))).split("\n");
const context = (timeZone?: string) => ({ now: () => NOW, ...(timeZone ? { timeZone } : {}) }) as unknown as ToolContext;

describe("current_time", () => {
  it("uses the chat's zone when the model names none", async () => {
    const answer = await lines({}, "Asia/Tokyo");
    expect(answer[0]).toBe("UTC: 2026-12-01T22:40:05.000Z");
    // 22:40 UTC on Tuesday is 07:40 on Wednesday in Tokyo.
    expect(answer[1]).toMatch(/^Asia\/Tokyo: Wednesday,? 2 December 2026 at 07:40:05 /);
  });

  it("uses the zone the model names over the chat's, and UTC alone without either", async () => {
    expect((await lines({ time_zone: "America/Sao_Paulo" }, "Asia/Tokyo"))[1]).toMatch(/^America\/Sao_Paulo: Tuesday,? 1 December 2026 at 19:40:05 /);
    expect(await lines({})).toEqual(["UTC: 2026-12-01T22:40:05.000Z"]);
  });
});
