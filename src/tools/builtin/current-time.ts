import type { Tool } from "../registry.js";

/**
 * The time is a tool, not part of the system prompt: a per-turn timestamp in the prompt
 * would break the cached prefix on every request.
 */
export const currentTimeTool: Tool = {
  definition: {
    type: "function",
    function: {
      name: "current_time",
      description: "The current date and time (ISO 8601, UTC, and in the chat's time zone or the IANA time zone given).",
      parameters: {
        type: "object",
        properties: { time_zone: { type: "string", description: "IANA time zone, e.g. Europe/Madrid; unset: the chat's" } },
        additionalProperties: false,
      },
    },
  },
  async run(args, context) {
    const now = new Date(context.now());
    // The chat's zone (/timezone, else TZ) unless the model asks for another.
    const zone = typeof args.time_zone === "string" && args.time_zone.trim() !== "" ? args.time_zone : context.timeZone;
    const utc = now.toISOString();
    if (!zone) return `UTC: ${utc}`;
    try {
      const local = new Intl.DateTimeFormat("en-GB", { timeZone: zone, dateStyle: "full", timeStyle: "long" }).format(now);
      return `UTC: ${utc}\n${zone}: ${local}`;
    } catch {
      return `UTC: ${utc}\n(unknown time zone: ${zone})`;
    }
  },
};
