import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Writes a YAML configuration file for LONGHAUL_CONFIG_FILE; → its path. */
export function writeConfigFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "longhaul-config-")), "longhaul.yaml");
  writeFileSync(file, text);
  return file;
}
