/**
 * A multipart/form-data reader for the fakes, written here (not undici's, which refuses what
 * grammY sends: `content-disposition:form-data;name="x";filename=a.md`, no spaces and an
 * unquoted filename, which Telegram accepts). Works on bytes: files come back exactly as sent.
 */
export interface MultipartFile {
  /** The part's field name. */
  name: string;
  /** The filename the part declared ("" when it declared none). */
  filename: string;
  contentType: string;
  bytes: Buffer;
}

export interface Multipart {
  fields: Map<string, string>;
  files: MultipartFile[];
}

/** The boundary of a multipart/form-data content type, or undefined for any other type. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\s*;/i.test(contentType)) return undefined;
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

/** → the parts, or an error message for a body that is not well-formed multipart. */
export function parseMultipart(body: Buffer, boundary: string): Multipart | { error: string } {
  const delimiter = Buffer.from(`--${boundary}`);
  const fields = new Map<string, string>();
  const files: MultipartFile[] = [];
  let at = body.indexOf(delimiter);
  if (at < 0) return { error: "no multipart boundary in the body" };
  for (;;) {
    at += delimiter.length;
    if (body.subarray(at, at + 2).toString() === "--") return { fields, files };
    if (body.subarray(at, at + 2).toString() !== "\r\n") return { error: "malformed multipart delimiter" };
    at += 2;
    const headerEnd = body.indexOf("\r\n\r\n", at);
    if (headerEnd < 0) return { error: "multipart part without a header end" };
    const headers = new Map<string, string>();
    for (const line of body.subarray(at, headerEnd).toString("utf8").split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const next = body.indexOf(Buffer.concat([Buffer.from("\r\n"), delimiter]), headerEnd + 4);
    if (next < 0) return { error: "multipart part without a closing delimiter" };
    const content = body.subarray(headerEnd + 4, next);
    const disposition = headers.get("content-disposition") ?? "";
    const name = param(disposition, "name");
    if (!/^form-data\b/i.test(disposition) || name === undefined) return { error: "multipart part without content-disposition form-data; name" };
    const filename = param(disposition, "filename");
    if (filename !== undefined) files.push({ name, filename, contentType: headers.get("content-type") ?? "application/octet-stream", bytes: Buffer.from(content) });
    else fields.set(name, content.toString("utf8"));
    at = next + 2;
  }
}

function param(header: string, key: string): string | undefined {
  const match = new RegExp(`;\\s*${key}=(?:"((?:[^"\\\\]|\\\\.)*)"|([^;]*))`, "i").exec(header);
  if (!match) return undefined;
  return (match[1] ?? match[2] ?? "").trim();
}
