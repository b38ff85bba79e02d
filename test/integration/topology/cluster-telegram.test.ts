/**
 * The Telegram bot end to end on a Redis Cluster (three masters with a replica each, from
 * Debian's redis-server), the tests of test/helpers/topology-telegram.ts: BullMQ's delayed
 * reminder job on its queue's own slot, each message acknowledged after WAIT 1 on the nodes it
 * was written to.
 */
import { startRedisCluster } from "../../helpers/redis-cluster.js";
import { describeTelegramOn } from "../../helpers/topology-telegram.js";

describeTelegramOn("Telegram on Redis Cluster", {
  name: "cluster",
  async start() {
    const cluster = await startRedisCluster({ replicas: 1 });
    // REDIS_URL points nowhere: the nodes are the seeds.
    return { env: { REDIS_URL: "redis://127.0.0.1:1", REDIS_CLUSTER_NODES: cluster.nodeList, REDIS_MIN_REPLICAS_ACK: "1" }, dispose: () => cluster.dispose() };
  },
});
