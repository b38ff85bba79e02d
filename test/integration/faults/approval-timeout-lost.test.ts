/**
 * An approval whose timeout job was never added still expires (issue 28 item 4): the job is
 * added after the commit that asks, so a crash (or a failed add) in between used to leave the
 * approval pending forever and the request unanswered. The approval is recorded before the
 * commit, and the sweeper adds the job of any that is due.
 */
import { Queue } from "bullmq";
import { describe, expect, it } from "vitest";
import { createRedis, TURN_QUEUE } from "../../../src/queue/index.js";
import type { Tool } from "../../../src/tools/index.js";
import { startFakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { closeAfterTest } from "../../helpers/close-after-test.js";

const dangerous: Tool = {
  definition: { type: "function", function: { name: "launch", description: "Launches it", parameters: { type: "object", properties: {} } } },
  needsApproval: true,
  run: async () => "launched",
};

describe("approval timeouts", () => {
  it("an approval whose timeout job was lost after the commit is denied when due, and the model hears it", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    llm.setHandler((request) => {
      const last = request.body.messages.at(-1);
      if (last?.role === "tool") return { text: `after approval: ${String(last.content)}` };
      return { toolCalls: [{ name: "launch" }] };
    });
    const config = testConfig({ LLM_BASE_URL: llm.url, APPROVAL_TIMEOUT_S: "2" });
    const adapter = new RecordingAdapter("console");
    const pipeline = closeAfterTest(await startPipeline(config, [adapter], { tools: [dangerous] }));
    const connection = createRedis(config.REDIS_URL!);
    const queue = new Queue(TURN_QUEUE, { connection, prefix: config.REDIS_PREFIX });
    try {
      await adapter.submit(inbound({ text: "launch it", messageId: "ap1" }));
      await adapter.waitFor((sent) => sent.some((entry) => entry.reply.actions !== undefined), 60_000);
      // The timeout job the worker added after its commit is lost (as if it had died in between).
      let removed = 0;
      const deadline = Date.now() + 10_000;
      while (removed === 0 && Date.now() < deadline) {
        for (const job of await queue.getJobs(["delayed", "waiting", "prioritized"])) {
          if (job.name === "approval-timeout") {
            await job.remove();
            removed++;
          }
        }
        if (removed === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(removed).toBe(1);
      // Due after 2 s; the sweeper (every 5 s) adds the job again and the timeout turn denies it.
      await adapter.waitFor((sent) => sent.some((entry) => entry.reply.text.startsWith("after approval:")), 60_000);
      const answer = adapter.sent.find((entry) => entry.reply.text.startsWith("after approval:"))!;
      expect(answer.reply.text).toMatch(/not run/i);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });
});
