/** Public face of src/nn. */
export { CausalLM } from "./causal_lm.ts";
export { type ForwardOptions } from "./decoder.ts";
export { type Packing, packingOf, type ScoredRows, scoredRowsOf } from "./packing.ts";
export { type KvCache, type KvDtype } from "./kv_cache.ts";
export { PagedKvCache, type PagedSequence } from "./paged_kv_cache.ts";
export { AdamW } from "./optim.ts";
export { Critic } from "./critic.ts";
export { initLora, LoraAdapters, loraSettings, mergeLoraRef } from "./lora.ts";
export { loraLinear } from "./lora_linear.ts";
export { positionIdsFromMask, refLogits, type RefWeights } from "./ref_model.ts";
export { type RopeFrequencies, ropeFrequencies } from "./rope_scaling.ts";
export { TINY_FAMILIES } from "./tiny_families.ts";
export {
  TINY_LLAMA,
  TINY_QWEN2,
  tinyModelConfig,
  tinyWeights,
  type TinyWeightsOptions,
} from "./tiny_model.ts";
// For tests only (the layer rule routes other folders' tests through this file).
export { initWeights, VALUE_HEAD_WEIGHT, weightShapes } from "./weights.ts";
export { HalfWeights } from "./half_weights.ts";
