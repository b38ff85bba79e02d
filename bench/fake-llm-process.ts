/**
 * The fake LLM in a process of its own, for bench/pipeline.ts: so that the CPU it spends is not
 * counted as the gateway's. Prints its URL on the first line of stdout; runs until killed.
 */
import { startFakeLlm } from "../test/fakes/fake-llm.js";

const llm = await startFakeLlm();
// The bench sends tens of thousands of requests: keep none of them.
setInterval(() => llm.requests.splice(0), 1_000).unref();
console.log(llm.url);
process.on("SIGTERM", () => void llm.close().finally(() => process.exit(0)));
