// Lets a newcomer run `npm start` or `npm test` on a fresh clone: installs the locked
// dependencies once when node_modules is missing, and does nothing otherwise.
import { existsSync } from "node:fs";
import { execSync } from "node:child_process";

if (!existsSync(new URL("../node_modules/.package-lock.json", import.meta.url))) {
  console.error("longhaul: installing dependencies (npm ci) …");
  execSync("npm ci", { stdio: ["ignore", "inherit", "inherit"], cwd: new URL("..", import.meta.url) });
}
