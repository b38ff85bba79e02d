import { describe, expect, it } from "vitest";
import { invalidOptions, slashOptions } from "../../fakes/fake-discord-options.js";

/** The fake Discord refuses what Discord refuses in a command's options, and dispatches only what its client would send. */
describe("fake Discord: application command options", () => {
  const code = { type: 3, name: "code", description: "The code", required: true };
  const pair = { name: "pair", options: [{ type: 1, name: "approve", description: "Approve", options: [code] }] };
  const budget = { name: "budget", options: [
    { type: 3, name: "chat", description: "Which chat", required: true },
    { type: 3, name: "period", description: "Which limit", required: false, choices: [{ name: "daily", value: "daily" }, { name: "monthly", value: "monthly" }] },
  ] };

  it("refuses a required option after an optional one, subcommands mixed with values or nested, bad choices", () => {
    expect(invalidOptions(budget.options, true)).toBeUndefined();
    expect(invalidOptions(pair.options, true)).toBeUndefined();
    expect(invalidOptions([...budget.options].reverse(), true)).toMatchObject({ code: 50035, errors: { "options.required": {} } });
    expect(invalidOptions([...pair.options, code], true)).toMatchObject({ code: 50035 });
    expect(invalidOptions([{ ...pair.options[0], options: pair.options }], true)).toMatchObject({ code: 50035 });
    expect(invalidOptions([{ ...code, choices: [{ name: "x", value: "y".repeat(101) }] }], true)).toMatchObject({ errors: { "options.choices.value": {} } });
    expect(invalidOptions([{ ...code, name: "Code" }], true)).toMatchObject({ errors: { "options.name": {} } });
  });

  it("dispatches a subcommand with its values; refuses a missing subcommand or required value, an unknown option, a value outside the choices", () => {
    expect(slashOptions(pair, { subcommand: "approve", values: { code: "K7Q2MX" } })).toEqual([{ name: "approve", type: 1, options: [{ name: "code", type: 3, value: "K7Q2MX" }] }]);
    expect(slashOptions(budget, { values: { chat: "here" } })).toEqual([{ name: "chat", type: 3, value: "here" }]);
    expect(() => slashOptions(pair, { values: { code: "K7Q2MX" } })).toThrow(/no subcommand/);
    expect(() => slashOptions(pair, { subcommand: "approve" })).toThrow(/needs code/);
    expect(() => slashOptions(budget, { values: { chat: "here", amount: "$5" } })).toThrow(/no option amount/);
    expect(() => slashOptions(budget, { values: { chat: "here", period: "weekly" } })).toThrow(/no choice/);
  });
});
