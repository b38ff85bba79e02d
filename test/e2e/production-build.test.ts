/**
 * The Dockerfile's steps without Docker (no engine runs here), so the image recipe cannot rot:
 * compile with the build tsconfig, install production dependencies only (`npm ci --omit=dev`)
 * in a clean directory, then start the built entry point from the Dockerfile's CMD in the
 * gateway and worker roles against Redis and answer a console message.
 */
import { execFileSync, spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { testEnv } from "../helpers/config.js";
import { makePdf } from "../helpers/media-files.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

describe("production build (the Dockerfile's steps)", () => {
  let image: string;
  let llm: FakeLlm;

  beforeAll(async () => {
    image = mkdtempSync(join(tmpdir(), "longhaul-image-"));
    execFileSync("npx", ["tsc", "-p", "tsconfig.build.json", "--outDir", join(image, "dist")], { cwd: ROOT, stdio: "pipe" });
    cpSync(join(ROOT, "package.json"), join(image, "package.json"));
    cpSync(join(ROOT, "package-lock.json"), join(image, "package-lock.json"));
    execFileSync("npm", ["ci", "--omit=dev", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline"], { cwd: image, stdio: "pipe" });
    llm = await startFakeLlm();
  }, 240_000);

  afterAll(async () => {
    await llm?.close();
    rmSync(image, { recursive: true, force: true });
  });

  it("has no dev dependency in the runtime install", () => {
    const installed = JSON.parse(readFileSync(join(image, "node_modules/.package-lock.json"), "utf8")) as { packages: Record<string, unknown> };
    for (const dev of ["tsx", "vitest", "typescript", "fast-check"]) expect(Object.keys(installed.packages)).not.toContain(`node_modules/${dev}`);
  });

  it("reads a PDF in the built extraction worker thread (dist/src/media/extract-worker.js, no tsx)", () => {
    const script = `import { extractText } from "./dist/src/media/extract.js";
      const { text } = await extractText("pdf", Buffer.from(process.argv[1], "base64"), { memoryMb: 128, timeoutMs: 20000, maxPages: 10, maxChars: 1000 });
      process.stdout.write(text);`;
    const pdf = makePdf(["read by the built worker"]).toString("base64");
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script, pdf], { cwd: image, encoding: "utf8" });
    expect(out).toBe("read by the built worker");
  });

  it("starts the built entry point as gateway and worker and answers a console message", async () => {
    const cmd = /^CMD \["node", "([^"]+)"\]/m.exec(readFileSync(join(ROOT, "Dockerfile"), "utf8"))?.[1];
    expect(cmd).toBe("dist/src/main.js");
    const env = { ...testEnv({ LLM_BASE_URL: llm.url, LOG_LEVEL: "info" }), PATH: process.env.PATH ?? "", NODE_ENV: "production" };
    const worker = spawn(process.execPath, [cmd!], { cwd: image, env: { ...env, LONGHAUL_ROLE: "worker" }, stdio: ["ignore", "ignore", "pipe"] });
    const gateway = spawn(process.execPath, [cmd!], { cwd: image, env: { ...env, LONGHAUL_ROLE: "gateway", CONSOLE: "on" }, stdio: ["pipe", "pipe", "pipe"] });
    let workerLog = "";
    worker.stderr.setEncoding("utf8").on("data", (chunk: string) => (workerLog += chunk));
    let out = "";
    gateway.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    try {
      gateway.stdin.end("hello from the image\n");
      const code = await new Promise<number | null>((resolve) => gateway.once("exit", resolve));
      expect(code).toBe(0);
      expect(out.trim()).toBe("echo: hello from the image");
      expect(workerLog).toContain("turn-committed");
    } finally {
      worker.kill("SIGTERM");
      await new Promise((resolve) => worker.once("exit", resolve));
    }
  });
});
