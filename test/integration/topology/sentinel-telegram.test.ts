/**
 * The Telegram bot end to end on a Sentinel setup (a master, two replicas, three sentinels from
 * Debian's redis-server), the tests of test/helpers/topology-telegram.ts: every connection going
 * through the master the sentinels name, each message acknowledged after WAIT 1.
 */
import { startSentinelSetup } from "../../helpers/redis-sentinel.js";
import { describeTelegramOn } from "../../helpers/topology-telegram.js";

describeTelegramOn("Telegram on Redis Sentinel", {
  name: "sentinel",
  async start() {
    const setup = await startSentinelSetup();
    // REDIS_URL points nowhere: the sentinels name the master.
    return { env: { REDIS_URL: "redis://127.0.0.1:1", REDIS_SENTINELS: setup.sentinels, REDIS_SENTINEL_MASTER: setup.master }, dispose: () => setup.dispose() };
  },
});
