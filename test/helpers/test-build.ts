import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Compiles the app once for child processes: starting from JavaScript is about twice as fast
 * as compiling TypeScript on the fly in every process, which matters when a test starts
 * several workers on two cores. It emits without type-checking (`--noCheck`: the same files,
 * byte for byte, for a quarter of the CPU; the whole run waits for this build): `npm run
 * typecheck` reports type errors.
 * Each run builds into its own directory (concurrent runs must not delete each other's), and
 * publishes it in LONGHAUL_TEST_BUILD_DIR, which test workers inherit.
 */
export function buildForChildProcesses(): { dir: string; remove(): void } {
  const dir = `${ROOT}.tmp/test-dist-${process.pid}`;
  rmSync(dir, { recursive: true, force: true });
  const build = spawnSync(process.execPath, [`${ROOT}node_modules/typescript/bin/tsc`, "-p", "tsconfig.build.json", "--noCheck", "--outDir", dir], { cwd: ROOT, encoding: "utf8" });
  if (!existsSync(`${dir}/src/main.js`)) throw new Error(`test build failed:\n${build.stdout}${build.stderr}`);
  process.env.LONGHAUL_TEST_BUILD_DIR = dir;
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
