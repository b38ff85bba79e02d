export * from "./jobs.js";
export { createProducers, type Producers } from "./producers.js";
export { keySlot } from "./key-slot.js";
export { logWorkerError } from "./worker-errors.js";
export { CONNECTION_NAMES, clusterMasters, createRedis, isCluster, queuePrefixOf, replicaCounter, type ClusterAddress, describeRedisAddress, parseHostPorts, pingWithin, readConfirmer, type HostPort, type Redis, type RedisAddress, type SentinelAddress } from "./redis.js";
export { SCHEDULE_QUEUE, createFiringQueue, firingJobId, type FiringJobData, type FiringQueue } from "./schedule.js";
export { IDLE_QUEUE, createIdleQueue, idleDedupId, type IdleJobData, type IdleQueue } from "./idle.js";
