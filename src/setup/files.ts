/**
 * The two files `npm run setup` writes, edited in place, never rewritten from scratch: the
 * YAML configuration (the `yaml` library's Document keeps comments, key order and every key we
 * do not touch) and `.env`, which holds the secrets alone (lines we do not touch stay as they
 * are; the file is written to a temporary file of mode 600 and renamed over the old one, so it
 * is never readable by others, not even for a moment).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parseEnv } from "node:util";
import { Document, isMap, isScalar, isSeq, parseDocument } from "yaml";

/** Flat settings as setup handles them: a string, a list, or undefined to remove the key. */
export type SettingValue = string | readonly string[] | undefined;

const HEADER = [
  " longhaul configuration, written by `npm run setup` and edited by each run of it.",
  " Every key is optional: config/example.env lists them all with their defaults; the",
  " environment wins over this file. Secrets (API keys, bot tokens) live in .env, not here.",
].join("\n");

export class ConfigFile {
  private constructor(readonly path: string, private readonly document: Document) {}

  /** The file as it is, or an empty one with a header when it does not exist yet. */
  static read(path: string): ConfigFile {
    const fresh = (comment: string) => {
      const document = new Document({});
      document.commentBefore = comment;
      return new ConfigFile(path, document);
    };
    if (!existsSync(path)) return fresh(HEADER);
    const document = parseDocument(readFileSync(path, "utf8"));
    if (document.errors.length > 0) throw new Error(`${path}: not valid YAML (${document.errors[0]?.message ?? "parse error"}); correct it by hand, then run setup again`);
    // Empty, or comments alone: they stay on top.
    if (document.contents === null) return fresh(document.commentBefore ?? HEADER);
    if (!isMap(document.contents)) throw new Error(`${path}: expected a mapping of configuration keys and sections`);
    return new ConfigFile(path, document);
  }

  /** A flat key's value as written (a list joined with commas, as the environment has it). */
  get(key: string): string | undefined {
    const node = this.document.get(key, true);
    if (isScalar(node)) return node.value === null || node.value === undefined ? undefined : String(node.value);
    if (isSeq(node)) return node.items.map((item) => (isScalar(item) ? String(item.value) : "")).filter((item) => item !== "").join(",");
    return undefined;
  }

  set(key: string, value: SettingValue): void {
    if (value === undefined) {
      this.document.delete(key);
      return;
    }
    if (typeof value === "string") {
      // An existing scalar keeps its own comment; only its value changes.
      const node = this.document.get(key, true);
      if (isScalar(node)) node.value = value;
      else this.document.set(key, value);
      return;
    }
    this.document.set(key, this.document.createNode([...value], { flow: true }));
  }

  has(key: string): boolean {
    return this.document.has(key);
  }

  save(): void {
    mkdirSync(dirname(this.path), { recursive: true });
    writeFileSync(this.path, this.document.toString());
  }
}

const ASSIGNMENT = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/;

export class EnvFile {
  private constructor(readonly path: string, private readonly lines: string[]) {}

  static read(path: string): EnvFile {
    if (!existsSync(path)) return new EnvFile(path, ["# Secrets of longhaul (API keys, bot tokens), written by `npm run setup`. Keep this file to yourself (mode 600)."]);
    const text = readFileSync(path, "utf8");
    return new EnvFile(path, text.replace(/\n$/, "").split("\n"));
  }

  /** The values as Node's own .env parser reads them (the one loadConfig uses). */
  values(): Record<string, string> {
    return parseEnv(this.lines.join("\n")) as Record<string, string>;
  }

  get(key: string): string | undefined {
    const value = this.values()[key];
    return value === undefined || value === "" ? undefined : value;
  }

  /** Replaces the key's line (its last one, which is the one that counts), or appends one. */
  set(key: string, value: string): void {
    if (/[\r\n]/.test(value)) throw new Error(`${key}: a value in .env cannot span lines`);
    const line = `${key}=${quote(value)}`;
    const index = this.lines.findLastIndex((existing) => ASSIGNMENT.exec(existing)?.[1] === key);
    if (index >= 0) this.lines[index] = line;
    else this.lines.push(line);
  }

  /** Removes every line that sets the key. */
  unset(key: string): void {
    for (let index = this.lines.length - 1; index >= 0; index--) if (ASSIGNMENT.exec(this.lines[index] ?? "")?.[1] === key) this.lines.splice(index, 1);
  }

  save(): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, `${this.lines.join("\n")}\n`, { mode: 0o600 });
    // The mode given at creation is masked by the umask; this one is not.
    chmodSync(temporary, 0o600);
    renameSync(temporary, this.path);
  }
}

/** Plain when Node's parser reads it back unchanged, else in single quotes (taken literally). */
function quote(value: string): string {
  if (/^[A-Za-z0-9_@%+=:,./~^-]*$/.test(value)) return value;
  if (!value.includes("'")) return `'${value}'`;
  if (!value.includes('"') && !value.includes("\\")) return `"${value}"`;
  throw new Error("a value with both kinds of quote cannot be written to .env; set it in the environment instead");
}
