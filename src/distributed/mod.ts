/**
 * Scale-out over NATS JetStream: the wire protocol, f16 weight versions, the trainer's
 * coordinator, the rollout worker, and (Deno only) a local nats-server for a run.
 */
export {
  ChecksumError,
  decodeJob,
  decodeTrajectory,
  defaultPrefix,
  encodeJob,
  encodeTrajectory,
  type Job,
  type JobSampling,
  type RunNames,
  runNames,
  sha256Hex,
  type Trajectory,
} from "./protocol.ts";
export {
  encodeWeights,
  halfToFloat,
  type HalfWeights,
  type PackedWeights,
  weightChunkBytes,
  WeightsDecoder,
  type WeightsManifest,
  type WeightsPlan,
} from "./weights.ts";
export {
  type FetchedWeights,
  fetchWeights,
  latestPlan,
  type PlanAt,
  type PublishTimes,
  resetWeightStream,
  WeightPublisher,
} from "./weight_stream.ts";
export { type VersionTimes, WeightCache } from "./weight_cache.ts";
export { connectNats, type ConnectOptions, type NatsCredentials } from "./connect.ts";
export { Coordinator, type CoordinatorOptions, type JobSpec, type RunInfo } from "./coordinator.ts";
export { runWorker, type WorkerOptions, type WorkerStats } from "./worker.ts";
export { serverConfig, type ServerConfigOptions, workerPermissions } from "./server_config.ts";
export {
  freePort,
  type NatsServer,
  natsServerAvailable,
  startNatsServer,
  type StartOptions,
} from "./server.ts";
export { natsTestsEnabled, withServer as withNatsServer } from "./test_server.ts";
export { BackgroundPublisher } from "./publisher.ts";
