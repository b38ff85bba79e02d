/**
 * An MCP tool result as the model reads it: text parts as text, `structuredContent` as JSON
 * (unless a text part already carries the same JSON), images and audio as short placeholders
 * (the images are handed on for vision models), resources by URI, `isError` as an error the
 * model can act on.
 */
import type { ToolImage, ToolOutput } from "../../core/tools.js";

type ContentPart =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource_link"; uri: string; name?: string; mimeType?: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: string; [key: string]: unknown };

export interface McpCallResult {
  content?: unknown;
  structuredContent?: unknown;
  isError?: boolean;
}

export function toToolOutput(result: McpCallResult, exposedName: string): ToolOutput {
  const parts = Array.isArray(result.content) ? (result.content as ContentPart[]) : [];
  const lines: string[] = [];
  const images: ToolImage[] = [];
  for (const part of parts) {
    switch (part.type) {
      case "text":
        lines.push(String((part as { text: unknown }).text ?? ""));
        break;
      case "image": {
        const image = part as { data: string; mimeType: string };
        images.push({ mimeType: image.mimeType, data: image.data });
        lines.push(`[image ${images.length}: ${image.mimeType}, ${sizeOf(image.data)}]`);
        break;
      }
      case "audio": {
        const audio = part as { data: string; mimeType: string };
        lines.push(`[audio: ${audio.mimeType}, ${sizeOf(audio.data)}; not shown]`);
        break;
      }
      case "resource_link": {
        const link = part as { uri: string; name?: string };
        lines.push(`[resource: ${link.uri}${link.name ? ` (${link.name})` : ""}]`);
        break;
      }
      case "resource": {
        const { resource } = part as { resource: { uri: string; mimeType?: string; text?: string; blob?: string } };
        lines.push(typeof resource.text === "string"
          ? `[resource ${resource.uri}]\n${resource.text}`
          : `[resource ${resource.uri}: ${resource.mimeType ?? "binary"}, ${sizeOf(resource.blob ?? "")}; not shown]`);
        break;
      }
      default:
        lines.push(`[${part.type} content; not shown]`);
    }
  }
  if (result.structuredContent !== undefined && !repeats(lines, result.structuredContent)) lines.push(JSON.stringify(result.structuredContent));
  const body = lines.join("\n").trim() || "(no output)";
  const output: ToolOutput = result.isError === true ? { text: `Error from ${exposedName}: ${body}`, isError: true } : { text: body };
  return images.length > 0 ? { ...output, images } : output;
}

/** Decoded size of base64 data, for placeholders. */
function sizeOf(base64: string): string {
  const bytes = Math.floor((base64.replace(/=+$/, "").length * 3) / 4);
  return bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${bytes} bytes`;
}

/**
 * Servers usually put their structured content in a text part too: as the same JSON (the
 * spec's advice), or as its text (server-filesystem's `{ content }`). Shown twice it only
 * costs tokens.
 */
function repeats(lines: readonly string[], structured: unknown): boolean {
  if (lines.some((line) => sameJson(line, structured))) return true;
  const leaves = leafValues(structured);
  const text = lines.join("\n");
  return leaves.length > 0 && leaves.every((leaf) => text.includes(leaf));
}

function leafValues(value: unknown): string[] {
  if (typeof value === "string") return value === "" ? [] : [value];
  if (typeof value === "number" || typeof value === "boolean") return [String(value)];
  if (Array.isArray(value)) return value.flatMap(leafValues);
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(leafValues);
  return [];
}

function sameJson(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}
