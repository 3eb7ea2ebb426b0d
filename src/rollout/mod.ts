/** Public face of src/rollout. */
export { generate } from "./generate.ts";
export {
  Engine,
  ENGINE_BATCH_STEPS_IN_FLIGHT,
  ENGINE_BLOCK_SIZE,
  ENGINE_STEPS_IN_FLIGHT,
  type EngineOptions,
  type EngineRequest,
  type EngineResult,
  type EngineStats,
} from "./engine.ts";
export { engineTurns, prefixCacheMetrics, submitPrompts, turnSeed } from "./engine_batch.ts";
export { SampleBuffers, sampleStep } from "./sampler.ts";
export { logProbTemperature } from "./ref_sampler.ts";
export { type ResponseRows, responseRows } from "./response_rows.ts";
export * from "./agent/mod.ts";
