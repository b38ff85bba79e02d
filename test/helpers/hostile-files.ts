/**
 * Crafted hostile documents, generated at test time (no binary fixtures): each is small on the
 * wire and expensive to open. Built like makePdf (media-files.ts): objects, then a correct
 * cross-reference table, so pdf.js reaches the expensive part instead of refusing early.
 */
import { constants, createDeflate } from "node:zlib";

/** A PDF of the given objects (object 1 must be the catalog); streams are Buffers appended raw. */
export function assemblePdf(objects: ReadonlyArray<string | { dictionary: string; stream: Buffer }>): Buffer {
  const parts: Buffer[] = [Buffer.from("%PDF-1.7\n", "latin1")];
  let length = parts[0]!.length;
  const offsets: number[] = [];
  const push = (part: Buffer) => {
    parts.push(part);
    length += part.length;
  };
  objects.forEach((object, index) => {
    offsets.push(length);
    if (typeof object === "string") {
      push(Buffer.from(`${index + 1} 0 obj\n${object}\nendobj\n`, "latin1"));
    } else {
      push(Buffer.from(`${index + 1} 0 obj\n${object.dictionary.replace(/>>$/, ` /Length ${object.stream.length} >>`)}\nstream\n`, "latin1"));
      push(object.stream);
      push(Buffer.from("\nendstream\nendobj\n", "latin1"));
    }
  });
  let tail = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) tail += `${String(offset).padStart(10, "0")} 00000 n \n`;
  tail += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`;
  push(Buffer.from(tail, "latin1"));
  return Buffer.concat(parts);
}

/** `total` bytes of `unit` repeated, deflated as a stream (never held whole in memory; run-length for one byte: fast, ~1000:1). */
export async function deflateRepeated(unit: string, total: number): Promise<Buffer> {
  const chunk = Buffer.from(unit.repeat(Math.max(1, Math.floor((1 << 20) / unit.length))), "latin1");
  const deflate = createDeflate({ level: 9, memLevel: 9, ...(unit.length === 1 ? { strategy: constants.Z_RLE } : {}) });
  const out: Buffer[] = [];
  deflate.on("data", (data: Buffer) => out.push(data));
  const done = new Promise<void>((resolve, reject) => {
    deflate.on("end", resolve);
    deflate.on("error", reject);
  });
  for (let written = 0; written < total; written += chunk.length) {
    if (!deflate.write(chunk)) await new Promise((resolve) => deflate.once("drain", resolve));
  }
  deflate.end();
  await done;
  return Buffer.concat(out);
}

const FONT = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>";

/** One page whose content stream inflates to `inflatedMb` MB (whitespace: nothing on the heap, all in array buffers). */
export async function decompressionBomb(inflatedMb: number): Promise<Buffer> {
  const stream = await deflateRepeated(" ", inflatedMb * 1024 * 1024);
  return assemblePdf([
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    { dictionary: "<< /Filter /FlateDecode >>", stream },
    FONT,
  ]);
}

/** `pages` pages that all draw the same content stream of `inflatedMb` MB of text-showing operators. */
export async function sharedHugeStream(pages: number, inflatedMb: number): Promise<Buffer> {
  const stream = await deflateRepeated("BT /F1 1 Tf (x) Tj ET\n", inflatedMb * 1024 * 1024);
  const first = 5;
  const kids = Array.from({ length: pages }, (_, index) => `${first + index} 0 R`).join(" ");
  return assemblePdf([
    "<< /Type /Catalog /Pages 2 0 R >>",
    `<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`,
    { dictionary: "<< /Filter /FlateDecode >>", stream },
    FONT,
    ...Array.from({ length: pages }, () => "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /Font << /F1 4 0 R >> >> >>"),
  ]);
}

/** A page whose resources hold arrays nested `depth` deep. */
export function deeplyNested(depth: number): Buffer {
  const nested = "[".repeat(depth) + "]".repeat(depth);
  return assemblePdf([
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> /Deep ${nested} >> >>`,
    { dictionary: "<< >>", stream: Buffer.from(`BT /F1 12 Tf 72 720 Td ${nested} TJ ET`, "latin1") },
    FONT,
  ]);
}

/** The first `fraction` of a file. */
export function truncated(file: Buffer, fraction: number): Buffer {
  return file.subarray(0, Math.floor(file.length * fraction));
}
