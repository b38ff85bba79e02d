/**
 * Nested sections of the configuration file (SPEC §11): structured settings that do not fit
 * one environment variable — `mcp.servers`, `access.tools`, `models`, `personas`, `budgets`.
 * Each capability declares its section's zod schema here; the loader validates the file's
 * sections against them and names the failing path (`mcp.servers.files.command`).
 * Every section is optional: absent means the capability's defaults.
 */
import { z } from "zod";
import { accessSection, checkToolSections, mcpSection } from "./tool-sections.js";
import { budgetsSection, checkOperatorSections, modelsSection, personasSection } from "./operator-sections.js";

export const sectionSchemas = {
  mcp: mcpSection,
  access: accessSection,
  models: modelsSection,
  personas: personasSection,
  budgets: budgetsSection,
} satisfies Record<string, z.ZodType>;

export type SectionName = keyof typeof sectionSchemas;
export type ConfigSections = { readonly [K in SectionName]?: z.infer<(typeof sectionSchemas)[K]> };

/** Checks across sections, after each parsed alone. → issue lines naming the path. */
export function checkSections(sections: ConfigSections): string[] {
  return [...checkToolSections(sections), ...checkOperatorSections(sections)];
}
