import { describe, expect, it } from "vitest";
import { COMMAND_MENU, COMMAND_NAMES, commandMenu } from "../../../src/core/commands.js";

describe("the command registry (one menu for every platform)", () => {
  it("holds only commands the worker interprets, each once, named and described within both platforms' limits", () => {
    const names = COMMAND_MENU.map((spec) => spec.name);
    expect(new Set(names).size).toBe(names.length);
    for (const spec of COMMAND_MENU) {
      expect(COMMAND_NAMES).toContain(spec.name);
      // Telegram: 1–32 of a-z 0-9 _; Discord: 1–32 lowercase; descriptions 1–100 (Discord's bound, under Telegram's 256).
      expect(spec.name).toMatch(/^[a-z0-9_]{1,32}$/);
      expect([...spec.description].length).toBeGreaterThan(0);
      expect([...spec.description].length).toBeLessThanOrEqual(100);
      expect(spec.scopes.length).toBeGreaterThan(0);
    }
    // Within Discord's 100 global commands and Telegram's 100 per menu.
    expect(COMMAND_MENU.length).toBeLessThanOrEqual(100);
  });

  it("offers /export only in private chats and /persona to private chats and group admins", () => {
    expect(commandMenu("group").map((spec) => spec.name)).not.toContain("export");
    expect(commandMenu("private").map((spec) => spec.name)).toContain("export");
    expect(commandMenu("group").map((spec) => spec.name)).not.toContain("persona");
    expect(commandMenu("group-admin").map((spec) => spec.name)).toContain("persona");
    expect(COMMAND_MENU.filter((spec) => spec.privateAnswer).map((spec) => spec.name)).toEqual(["usage", "memory", "export", "budget", "pair"]);
  });

  it("offers the bot admins' /budget and /pair in no Telegram menu; their named options are within Discord's limits", () => {
    for (const scope of ["private", "group", "group-admin"] as const) {
      expect(commandMenu(scope).map((spec) => spec.name)).not.toContain("budget");
      expect(commandMenu(scope).map((spec) => spec.name)).not.toContain("pair");
    }
    expect(commandMenu("bot-admin").map((spec) => spec.name)).toEqual(["budget", "pair"]);
    for (const spec of COMMAND_MENU) {
      const options = spec.options ?? [];
      expect(spec.options !== undefined && spec.argument !== undefined).toBe(false);
      expect(options.length).toBeLessThanOrEqual(25);
      // Required values first (Discord refuses a required option after an optional one).
      expect(options.map((option) => option.required === true)).toEqual([...options].sort((a, b) => Number(b.required === true) - Number(a.required === true)).map((option) => option.required === true));
      for (const option of options) {
        expect(option.name).toMatch(/^[-_a-z0-9]{1,32}$/);
        expect([...option.description].length).toBeGreaterThan(0);
        expect([...option.description].length).toBeLessThanOrEqual(100);
        expect((option.choices ?? []).length).toBeLessThanOrEqual(25);
      }
    }
  });
});
