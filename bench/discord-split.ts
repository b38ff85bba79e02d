/**
 * Splitting replies for Discord (src/adapters/discord/split.ts): time per call on long
 * replies, against a baseline measured in the same run: one linear pass over the text (split
 * into lines, joined again), the least any splitter does.
 * SPEC §11: no single input may block the event loop for more than 50 ms.
 *
 *   npx tsx bench/discord-split.ts
 */
import { splitMessage } from "../src/adapters/discord/split.js";
import { isMain, median, table } from "./stats.js";

const RUNS = 9;

function inputs(): Array<[string, string]> {
  const prose = "Rotating logs keeps disks from filling up and `old entries` searchable. 🇫🇷 ".repeat(20);
  const code = Array.from({ length: 60 }, (_, i) => `const step${i} = await rotate("/var/log/app-${i}.log"); # note`).join("\n");
  const table = "| a | b |\n|---|---|\n" + Array.from({ length: 30 }, (_, i) => `| row ${i} | value ${i} |`).join("\n");
  const reply = (blocks: number) => Array.from({ length: blocks }, (_, i) => `${prose}\n\nExample ${i}: \`\`\`ts\n${code}\n\`\`\`\n\n${table}`).join("\n\n");
  return [
    ["typical long reply (prose, code, a table)", reply(2)],
    ["very long reply (25× the above)", reply(25)],
    ["backticks, escapes, no line breaks", "` a `` b ``` c \\` ".repeat(8_000)],
    ["100,000 characters without a break", "x".repeat(100_000)],
    ["family emoji only (ZWJ sequences)", "👩‍👩‍👧‍👦".repeat(10_000)],
  ];
}

function timeOf(run: () => unknown): number {
  run();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i += 1) {
    const started = performance.now();
    run();
    times.push(performance.now() - started);
  }
  return median(times);
}

export function main(): string {
  const rows = inputs().map(([name, text]) => {
    const split = timeOf(() => splitMessage(text));
    const baseline = timeOf(() => text.split("\n").map((line) => line.trimEnd()).join("\n"));
    return [name, text.length, splitMessage(text).length, split, baseline, split / Math.max(baseline, 0.001)];
  });
  return table(["input", "chars", "parts", "split median ms", "linear pass ms", "ratio"], rows);
}

if (isMain(import.meta.url)) console.log(main());
