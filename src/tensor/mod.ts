export {
  type DType,
  DTYPE_BYTES,
  fmtShape,
  type Node,
  sameShape,
  shapeSize,
  Tensor,
  type TypedArray,
} from "./tensor.ts";
export { f16BitsToF32, f16ToF32Into, f32ToF16Bits, f32ToF16Into, roundToF16 } from "./half.ts";
export { scope, scopeAsync } from "./scope.ts";
export { isGradEnabled, isRecomputedLater, noGrad, noGradAsync, withGrad } from "./grad_mode.ts";
export { checkpoint, type CheckpointOptions } from "./ops/checkpoint.ts";
export { backward, OPS, record, recordMany, registerOp, zeroGrad } from "./autograd.ts";
export { accumulate, clone, fill, fillInPlace, scaleInPlace, zeros } from "./ops/basic.ts";
export { grid1d } from "./ops/grid.ts";
export { add, cast, mul, mulScalar } from "./ops/elementwise.ts";
export { dropout, dropoutMasked } from "./ops/dropout.ts";
export { dropoutRef } from "./ref/dropout.ts";
export { linear, type LinearOptions, matmul, matmulTiled } from "./ops/matmul.ts";
export {
  type FormKey,
  formKey,
  type GemmLayout,
  gemmLayout,
  loadPolicy,
  type TileForm,
  tileForms,
} from "./ops/matmul_kernel.ts";
export {
  type SplitPlan,
  splitPlan,
  splitPolicy,
  type SplitTail,
  tiledPlan,
  tiledSplits,
} from "./ops/matmul_splits.ts";
export { type CatProduct, matmulCat, type MatmulCatOptions } from "./ops/matmul_cat.ts";
export { rmsNorm } from "./ops/rmsnorm.ts";
export {
  type DynamicRopeOptions,
  rope,
  ropeDynamicInvFreq,
  ropeInvFreq,
  type RopeOptions,
  ropeQK,
} from "./ops/rope.ts";
export {
  type CacheWrite,
  type QkvSplits,
  ropeFromSplitsFits,
  ropeQKIntoCache,
} from "./ops/rope_cache.ts";
export { ropeDynamicInvFreqRef } from "./ref/rope.ts";
export { swiglu } from "./ops/swiglu.ts";
export { swigluProducts, swigluSplitPolicy } from "./ops/swiglu_split.ts";
export { swigluWoven, type SwigluWovenOptions, swigluWovenPolicy } from "./ops/swiglu_woven.ts";
export {
  linearNorm,
  type LinearNormOptions,
  linearNormPolicy,
  sumSplitsNorm,
} from "./ops/linear_norm.ts";
export {
  swigluLinear,
  swigluLinearApplies,
  type SwigluLinearConfig,
  swigluLinearConfig,
  type SwigluLinearOptions,
  swigluLinearPolicy,
} from "./ops/swiglu_linear.ts";
export {
  type QkvBiases,
  qkvLinear,
  qkvLinearApplies,
  type QkvLinearConfig,
  qkvLinearConfig,
  type QkvLinearOptions,
  qkvLinearPolicy,
  type QkvWeights,
} from "./ops/qkv_linear.ts";
export { adamwRef } from "./ref/adamw.ts";
export { clipGradNorm, gradNormAndScale } from "./ops/grad_norm.ts";
export {
  attention,
  type AttentionGemm,
  attentionPolicy,
  type AttentionPrecision,
} from "./ops/attention.ts";
export { decodePolicy } from "./ops/attention_decode.ts";
export { pagedAttention, type PagedAttentionOptions } from "./ops/paged_attention.ts";
export { type PagedCacheWrite, pagedRopeQKIntoCache } from "./ops/paged_rope_cache.ts";
export { embedding } from "./ops/embedding.ts";
export { selectRows, type SelectRowsOptions } from "./ops/select_rows.ts";
export { unpackHalves } from "./ops/unpack_halves.ts";
export { unpackHalvesRef } from "./ref/unpack_halves.ts";
export { inverseIndexRef, selectRowsRef } from "./ref/select_rows.ts";
export { sum } from "./ops/reduce.ts";
export { softmax } from "./ops/softmax.ts";
export { adamwStep } from "./ops/adamw.ts";
export { crossEntropy } from "./ops/cross_entropy.ts";
export { IGNORE_INDEX, logprobEntropy, logprobKernel } from "./ops/logprob.ts";
export { logprobEntropyBackwardRef, logprobEntropyRef } from "./ref/logprob.ts";
export {
  LM_HEAD_CHUNK_BYTES,
  lmHeadChunkColumns,
  lmHeadLogprob,
  type LmHeadLogprobOptions,
  type LmHeadLogprobResult,
} from "./ops/lm_head_logprob.ts";
export { lmHeadLogprobBackwardRef, lmHeadLogprobRef } from "./ref/lm_head_logprob.ts";
export { mixSeed, mulberry32, permutation, randInt, uniformArray } from "./random.ts";
export { unfusedKernel, unfusedLogProbs } from "./ops/logprob_unfused.ts";
export {
  type Gemm,
  gemm,
  pickTile,
  type TileConfig,
  tileDims,
  TILES,
  tileShape,
} from "./ops/matmul_kernel.ts";
export {
  gemmSkinny,
  type SkinnyConfig,
  skinnyConfig,
  skinnyMaxM,
  skinnyPolicy,
} from "./ops/matmul_skinny.ts";
export * from "./random.ts";
export { Registry } from "./registry.ts";
