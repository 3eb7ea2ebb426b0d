/**
 * The model the decode benches (generate_device.ts, engine_device.ts) run: a config by name and
 * cheap random weights (lora_device.ts fills its models with them too), and their command-line
 * reader (profile_generate.ts shares its decode-attention flags).
 */
import type { ModelConfig } from "../src/io/mod.ts";
import { weightShapes } from "../src/nn/mod.ts";
import {
  decodePolicy,
  linearNormPolicy,
  qkvLinearPolicy,
  type SkinnyConfig,
  skinnyPolicy,
  type SwigluLinearConfig,
  swigluLinearPolicy,
  swigluSplitPolicy,
  swigluWovenPolicy,
} from "../src/tensor/mod.ts";
import { isQwen25Shape, qwen25Config } from "./grpo_setup.ts";

export function arg(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < Deno.args.length ? Deno.args[i + 1] : fallback;
}

/**
 * Tuning flags of the decode kernels, shared by the decode benches:
 * --attn-min-chunk N / --attn-max-chunk N / --attn-target N: the fewest and most keys per split of
 * the decode attention kernel and the workgroups it aims at (--attn-solo-chunk N: the most keys
 * where its (row, kv head) pairs are no more than multiprocessors), --attn-wg N its invocations
 * per workgroup (--attn-wide N the larger ones, 0 none), --attn-kg N the k vec4s its score pass
 * loads together (`decodePolicy`);
 * --target-groups N / --min-stages N: the skinny matmul's split policy; --skinny-max-m N,
 * --skinny-max-m-small N: the most rows it takes (for small weights); --skinny-tiled-waves N:
 * products of that many waves of tiled blocks go tiled anyway (Infinity: never), --skinny-deep-k
 * N: so do products with K >= N times their columns (Infinity: never) (`skinnyPolicy`);
 * --fused-mlp 0 / --fused-qkv 0: gate, up and SwiGLU (q, k and v) as separate dispatches;
 * --qkv-split 0 / --mlp-split 0: the fused products unsplit over K;
 * --linear-norm 0: o_proj and down_proj leave their norms to rmsNorm's own dispatch;
 * --qkv-rope 0: the split q/k/v sum apart from the rotation and cache write; --qkv-wg-x N: the
 * fused q/k/v tile's threads along N past 128 rows (8: the skinny tile's); --swiglu-pair 0:
 * split gate and up GEMMs summed apart, then swiglu; --swiglu-woven 0: gate and up past the fused
 * skinny op's rows as two GEMMs (with one pass for both where they split K), not one woven
 * product; --woven-tile wide|large: the woven product's tile at any rows; --woven-splits N: its
 * K splits.
 */
export function applyDecodeFlags(): void {
  const targetGroups = arg("target-groups", "");
  if (targetGroups) skinnyPolicy.targetGroups = Number(targetGroups);
  skinnyPolicy.minStages = Number(arg("min-stages", `${skinnyPolicy.minStages}`));
  skinnyPolicy.maxM = Number(arg("skinny-max-m", `${skinnyPolicy.maxM}`));
  skinnyPolicy.maxMSmall = Number(arg("skinny-max-m-small", `${skinnyPolicy.maxMSmall}`));
  skinnyPolicy.tiledWaves = Number(arg("skinny-tiled-waves", `${skinnyPolicy.tiledWaves}`));
  skinnyPolicy.tiledDeepK = Number(arg("skinny-deep-k", `${skinnyPolicy.tiledDeepK}`));
  swigluLinearPolicy.enabled = arg("fused-mlp", "1") !== "0";
  linearNormPolicy.enabled = arg("linear-norm", "1") !== "0";
  qkvLinearPolicy.enabled = arg("fused-qkv", "1") !== "0";
  qkvLinearPolicy.splitK = arg("qkv-split", "1") !== "0";
  qkvLinearPolicy.rope = arg("qkv-rope", "1") !== "0";
  qkvLinearPolicy.wideX = Number(arg("qkv-wg-x", `${qkvLinearPolicy.wideX}`));
  swigluSplitPolicy.enabled = arg("swiglu-pair", "1") !== "0";
  swigluWovenPolicy.enabled = arg("swiglu-woven", "1") !== "0";
  const wovenTile = arg("woven-tile", "");
  if (wovenTile !== "" && wovenTile !== "wide" && wovenTile !== "large") {
    throw new Error(`--woven-tile ${wovenTile}: wide or large`);
  }
  swigluWovenPolicy.tile = wovenTile === "" ? null : wovenTile;
  const wovenSplits = arg("woven-splits", "");
  swigluWovenPolicy.splits = wovenSplits === "" ? null : Number(wovenSplits);
  swigluLinearPolicy.splitK = arg("mlp-split", "1") !== "0";
  decodePolicy.minChunk = Number(arg("attn-min-chunk", `${decodePolicy.minChunk}`));
  decodePolicy.maxChunk = Number(arg("attn-max-chunk", `${decodePolicy.maxChunk}`));
  decodePolicy.soloChunk = Number(arg("attn-solo-chunk", `${decodePolicy.soloChunk}`));
  decodePolicy.targetWorkgroups = Number(arg("attn-target", `${decodePolicy.targetWorkgroups}`));
  decodePolicy.maxInvocations = Number(arg("attn-wg", `${decodePolicy.maxInvocations}`));
  decodePolicy.loadGroup = Number(arg("attn-kg", `${decodePolicy.loadGroup}`));
  decodePolicy.wideInvocations = Number(arg("attn-wide", `${decodePolicy.wideInvocations}`));
}

/** The decode policies `applyDecodeFlags` sets, as a bench's JSON line reports them. */
export function decodeFlagsUsed() {
  return {
    skinny_policy: skinnyPolicy,
    decode_policy: decodePolicy,
    fused_mlp: swigluLinearPolicy.enabled,
    linear_norm: linearNormPolicy.enabled,
    fused_qkv: qkvLinearPolicy.enabled,
    qkv_split: qkvLinearPolicy.splitK,
    qkv_rope: qkvLinearPolicy.rope,
    qkv_wg_x: qkvLinearPolicy.wideX,
    swiglu_pair: swigluSplitPolicy.enabled,
    swiglu_woven: swigluWovenPolicy,
    mlp_split: swigluLinearPolicy.splitK,
  };
}

/**
 * Tiles the skinny product's probes try (`skinny_device.ts`, `skinny_sweep.ts`): rows x weight
 * rows a block, weight rows a thread (tn), K per stage where not 16.
 */
export const SKINNY_TILES: Record<string, SkinnyConfig> = {
  bm64_bn128_t8: { wgX: 16, wgY: 16, tn: 8, tm: 4, bk: 16 },
  bm64_bn64_t4: { wgX: 16, wgY: 16, tn: 4, tm: 4, bk: 16 },
  bm64_bn64_t8: { wgX: 8, wgY: 16, tn: 8, tm: 4, bk: 16 },
  bm64_bn64_t8_bk8: { wgX: 8, wgY: 16, tn: 8, tm: 4, bk: 8 },
  bm64_bn32_t4: { wgX: 8, wgY: 16, tn: 4, tm: 4, bk: 16 },
  bm64_bn32_t8: { wgX: 4, wgY: 16, tn: 8, tm: 4, bk: 16 },
  bm32_bn128_t8: { wgX: 16, wgY: 8, tn: 8, tm: 4, bk: 16 },
  bm32_bn64_t8: { wgX: 8, wgY: 8, tn: 8, tm: 4, bk: 16 },
};

/**
 * Tiles the fused skinny products' probes try (`swiglu_probe.ts`, `skinny_sweep.ts`), by threads
 * along N x M: 4 rows of each weight per thread, 4 rows of x.
 */
export const FUSED_TILES: Record<string, SwigluLinearConfig> = {
  "8x16": { wgX: 8, wgY: 16, tm: 4, bk: 16 },
  "16x8": { wgX: 16, wgY: 8, tm: 4, bk: 16 },
  "4x16": { wgX: 4, wgY: 16, tm: 4, bk: 16 },
  "16x16": { wgX: 16, wgY: 16, tm: 4, bk: 16 },
  "8x16_bk8": { wgX: 8, wgY: 16, tm: 4, bk: 8 },
  "8x8": { wgX: 8, wgY: 8, tm: 4, bk: 16 },
  "32x4": { wgX: 32, wgY: 4, tm: 4, bk: 16 },
};

/** --config tiny | qwen2.5-0.5b | qwen2.5-1.5b (the Qwen2.5 shapes of grpo_setup.ts). */
export function benchConfig(name: string): ModelConfig {
  const common = { eosTokenId: 0, rmsNormEps: 1e-6 };
  if (name === "tiny") {
    return qwen25Config("0.5b", {
      ...common,
      hiddenSize: 64,
      intermediateSize: 192,
      numHiddenLayers: Number(arg("layers", "2")),
      numAttentionHeads: 4,
      numKeyValueHeads: 2,
      vocabSize: 97,
      ropeTheta: 1e4,
    });
  }
  const shape = name.replace(/^qwen2\.5-/, "");
  if (!isQwen25Shape(shape)) {
    throw new Error(`--config ${name}: use tiny, qwen2.5-0.5b or qwen2.5-1.5b`);
  }
  const layers = arg("layers", ""), vocab = arg("vocab", "");
  return qwen25Config(shape, {
    ...common,
    ...(layers ? { numHiddenLayers: Number(layers) } : {}),
    ...(vocab ? { vocabSize: Number(vocab) } : {}),
  });
}

/** Cheap random weights (uniform with std 0.02, norms at 1): values do not matter for speed. */
export function randomArrays(config: ModelConfig): Map<string, Float32Array> {
  const shared = new Map<number, Float32Array>();
  let s = 12345;
  const out = new Map<string, Float32Array>();
  for (const [name, shape] of weightShapes(config)) {
    const n = shape.reduce((a, b) => a * b, 1);
    if (name.endsWith("norm.weight")) {
      out.set(name, new Float32Array(n).fill(1));
      continue;
    }
    let a = shared.get(n);
    if (!a) {
      a = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
        a[i] = (s / 4294967296 - 0.5) * 0.0693; // uniform(-a, a) with std 0.02
      }
      shared.set(n, a);
    }
    out.set(name, a);
  }
  return out;
}
