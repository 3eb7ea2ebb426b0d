/** Public face of src/nn. */
export { CausalLM, type ForwardOptions } from "./decoder.ts";
export { tinyModelConfig } from "./tiny.ts";
export { AdamW } from "./optim.ts";
export { Critic } from "./critic.ts";
export { positionIdsFromMask, refLogits, type RefWeights } from "./ref_model.ts";
export { leftPadded, testWeights, tinyQwen2 } from "./test_models.ts";
export { initWeights, weightShapes } from "./weights.ts";
