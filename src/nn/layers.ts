/**
 * One decoder layer of the Qwen2 / Qwen3 / Llama / Mistral family built from the tensor ops
 * (pre-norm attention and SwiGLU MLP with residuals; Qwen3's per-head q/k RMSNorm; optional
 * attention and MLP biases). Attention itself is a callback so that training (whole sequences)
 * and cached decoding (append to the KV cache, attend over it) share everything else.
 */
import { architecture, type ModelConfig } from "../io/mod.ts";
import { cast, isGradEnabled, linear as linearOp, record, registerOp } from "../tensor/mod.ts";
import { rmsNorm } from "../tensor/mod.ts";
import { ropeQK } from "../tensor/mod.ts";
import {
  linearNorm,
  qkvLinear,
  qkvLinearApplies,
  qkvLinearPolicy,
  type QkvSplits,
  ropeFromSplitsFits,
  swiglu,
  swigluLinear,
  swigluLinearApplies,
  swigluProducts,
} from "../tensor/mod.ts";
import type { Tensor } from "../tensor/mod.ts";
import { hasOutputBias } from "./weights.ts";
import type { LoraPair } from "./lora.ts";
import { loraLinear } from "./lora_linear.ts";
import type { HalfWeights } from "./half_weights.ts";

registerOp("view", "view(x, shape): the same buffer under another shape; the gradient likewise");

/** A differentiable reshape (Tensor.reshape itself is a plain view outside the tape). */
export function view(x: Tensor, shape: readonly number[]): Tensor {
  const out = x.reshape(shape);
  return record("view", [x], out, (g) => [g.reshape(x.shape)]);
}

export interface LayerParams {
  inputNorm: Tensor;
  q: Tensor;
  k: Tensor;
  v: Tensor;
  qBias: Tensor | null;
  kBias: Tensor | null;
  vBias: Tensor | null;
  o: Tensor;
  oBias: Tensor | null;
  /** Qwen3: RMSNorm weights [D] over each head of q and k, before RoPE. */
  qNorm: Tensor | null;
  kNorm: Tensor | null;
  postNorm: Tensor;
  gate: Tensor;
  up: Tensor;
  down: Tensor;
  gateBias: Tensor | null;
  upBias: Tensor | null;
  downBias: Tensor | null;
  /** LoRA adapters of this layer's linear modules, by short name (`q_proj`); empty: none. */
  lora: ReadonlyMap<string, LoraPair>;
}

/** How q and k are rotated in a forward: theta's table, or a given one, and the cos/sin factor. */
export interface RopeCall {
  theta: number;
  invFreq?: Tensor; // [D/2]
  scale: number;
}

/** Picks layer `l`'s tensors out of a map keyed by HF names. */
export function layerParams(
  config: ModelConfig,
  weights: ReadonlyMap<string, Tensor>,
  l: number,
  lora?: ReadonlyMap<string, LoraPair>,
): LayerParams {
  const p = `model.layers.${l}`;
  const w = (name: string) => {
    const t = weights.get(`${p}.${name}`);
    if (!t) throw new Error(`decoder: missing weight ${p}.${name}`);
    return t;
  };
  const bias = config.attentionBias;
  const qkNorm = architecture(config.modelType).qkNorm;
  const mlp = config.mlpBias;
  return {
    inputNorm: w("input_layernorm.weight"),
    q: w("self_attn.q_proj.weight"),
    k: w("self_attn.k_proj.weight"),
    v: w("self_attn.v_proj.weight"),
    qBias: bias ? w("self_attn.q_proj.bias") : null,
    kBias: bias ? w("self_attn.k_proj.bias") : null,
    vBias: bias ? w("self_attn.v_proj.bias") : null,
    o: w("self_attn.o_proj.weight"),
    oBias: hasOutputBias(config) ? w("self_attn.o_proj.bias") : null,
    qNorm: qkNorm ? w("self_attn.q_norm.weight") : null,
    kNorm: qkNorm ? w("self_attn.k_norm.weight") : null,
    postNorm: w("post_attention_layernorm.weight"),
    gate: w("mlp.gate_proj.weight"),
    up: w("mlp.up_proj.weight"),
    down: w("mlp.down_proj.weight"),
    gateBias: mlp ? w("mlp.gate_proj.bias") : null,
    upBias: mlp ? w("mlp.up_proj.bias") : null,
    downBias: mlp ? w("mlp.down_proj.bias") : null,
    lora: new Map([...lora ?? []].flatMap(([m, pair]) => {
      const hit = m.startsWith(`${p}.`) ? m.slice(p.length + 1).split(".").at(-1)! : null;
      return hit ? [[hit, pair]] : [];
    })),
  };
}

/** Attention over rotated q [B, T, Hq, D], k and v [B, T, Hkv, D] -> [B, T, Hq, D]. */
export type Attend = (q: Tensor, k: Tensor, v: Tensor) => Tensor;

/**
 * Rotation of q [B, T, Hq, D] and k [B, T, Hkv, D] at the layer's positions, for a pass that
 * brings its own (the KV-cache path writes k and v into its cache in the same dispatch).
 */
export type Rotate = (
  /**
   * With `splits`, q, k and v are still to be made from a split q/k/v product's partials: the
   * rotation makes them in its pass (rope_cache.ts's `QkvSplits`).
   */
  qkv: { q: Tensor; k: Tensor; v: Tensor; positions: Tensor; splits?: QkvSplits },
  rope: RopeCall,
) => [Tensor, Tensor];

/** One layer's attention: `rotate` (default ropeQK) then `attend`. */
export interface LayerAttention {
  attend: Attend;
  rotate?: Rotate;
}

/** A layer's context: the model, positions, attention, rotation and precision of one pass. */
export interface LayerContext {
  config: ModelConfig;
  positions: Tensor;
  attend: Attend;
  rotate?: Rotate;
  rope: RopeCall;
  /** false runs the base weights alone (the reference policy of a LoRA actor). */
  adapters: boolean;
  /**
   * Mixed precision: the linear layers multiply f16 copies of their inputs (cast once per
   * input, shared by the projections that read it) and of their weights (these copies), with
   * f32 accumulation and f32 outputs; LoRA-adapted modules stay f32. Null: f32 throughout.
   */
  half?: HalfWeights | null;
}

/** h [B, T, C] -> h + attn(norm(h)) -> + mlp(norm(.)). */
export function decoderLayer(h: Tensor, w: LayerParams, ctx: LayerContext): Tensor {
  return decoderLayerStep(h, w, ctx).h;
}

/** An inference layer's output, and the next norm of it when the layer made that too. */
export interface LayerStep {
  h: Tensor;
  normed: Tensor | null;
}

/**
 * decoderLayer, where a product may also normalise its output for what reads it (`linearNorm`):
 * o_proj with post_attention_layernorm, and down_proj with `nextNorm` (the next layer's
 * input_layernorm or the final norm), whose result comes back as `normed`, the next layer's
 * `normedInput` (then it does not normalise h itself).
 */
export function decoderLayerStep(
  h: Tensor,
  w: LayerParams,
  ctx: LayerContext & { normedInput?: Tensor | null; nextNorm?: Tensor | null },
): LayerStep {
  const c = ctx.config;
  const amp = ctx.half ?? null;
  // The f16 copy of a linear input, made once for all the projections that read it.
  const halves = new Map<Tensor, Tensor>();
  const f16 = (x: Tensor) => {
    if (!amp || x.dtype === "f16") return x;
    let t = halves.get(x);
    if (!t) halves.set(x, t = cast(x, "f16"));
    return t;
  };
  // residual: the block's input, added in the product's epilogue (o_proj, down_proj).
  const linear = (x: Tensor, m: string, wt: Tensor, b: Tensor | null, residual?: Tensor) => {
    const pair = ctx.adapters ? w.lora.get(m) ?? null : null;
    if (!amp || pair) return loraLinear(x, wt, b, pair, { residual });
    return linearOp(f16(x), wt, b, { residual, half: amp.get(wt) });
  };
  // The operands of a fused (inference-only) projection: f16 copies under mixed precision.
  const fusedW = (t: Tensor) => amp ? amp.get(t) : t;
  const [B, T] = h.shape;
  const D = c.headDim, Hq = c.numAttentionHeads, Hkv = c.numKeyValueHeads;
  const eps = c.rmsNormEps;
  const x = ctx.normedInput ?? rmsNorm(h, w.inputNorm, { eps });
  // A product and its norm fuse off the tape, without mixed precision or an adapter on it.
  const fuses = (m: string) => !isGradEnabled() && !amp && !(ctx.adapters && w.lora.has(m));
  // Few rows, no gradient, no adapter on q/k/v (decoding): one dispatch instead of three.
  const qkvAdapted = ctx.adapters && ["q_proj", "k_proj", "v_proj"].some((m) => w.lora.has(m));
  const qkvW = [fusedW(w.q), fusedW(w.k), fusedW(w.v)] as const;
  const qkvB = [w.qBias, w.kBias, w.vBias] as const;
  // A cached rotation takes a split product's partials: bias, RoPE and the cache write in one.
  let rotated: [Tensor, Tensor] | null = null;
  const rotate = ctx.rotate;
  const fromSplits = rotate && !w.qNorm && qkvLinearPolicy.rope && ropeFromSplitsFits()
    ? (part: Tensor, splits: number, [q, k, v]: [Tensor, Tensor, Tensor]) => {
      const biases = qkvB[0] && qkvB[1] && qkvB[2] ? [qkvB[0], qkvB[1], qkvB[2]] as const : null;
      rotated = rotate({
        q: view(q, [B, T, Hq, D]),
        k: view(k, [B, T, Hkv, D]),
        v: view(v, [B, T, Hkv, D]),
        positions: ctx.positions,
        splits: { part, splits, biases },
      }, ctx.rope);
    }
    : undefined;
  const [q0, k0, v0] = !qkvAdapted && qkvLinearApplies(x, qkvW, qkvB)
    ? qkvLinear(f16(x), qkvW, qkvB, { sum: fromSplits })
    : [
      linear(x, "q_proj", w.q, w.qBias),
      linear(x, "k_proj", w.k, w.kBias),
      linear(x, "v_proj", w.v, w.vBias),
    ];
  let q = view(q0, [B, T, Hq, D]);
  let k = view(k0, [B, T, Hkv, D]);
  const v = view(v0, [B, T, Hkv, D]);
  if (w.qNorm && w.kNorm) {
    q = rmsNorm(q, w.qNorm, { eps });
    k = rmsNorm(k, w.kNorm, { eps });
  }
  const [qr, kr] = rotated ??
    (rotate
      ? rotate({ q, k, v, positions: ctx.positions }, ctx.rope)
      : ropeQK(q, k, ctx.positions, ctx.rope));
  const att = view(ctx.attend(qr, kr, v), [B, T, Hq * D]);
  let h1: Tensor, x2: Tensor;
  if (fuses("o_proj")) [h1, x2] = linearNorm(att, w.o, w.oBias, w.postNorm, { residual: h, eps });
  else {
    h1 = linear(att, "o_proj", w.o, w.oBias, h);
    x2 = rmsNorm(h1, w.postNorm, { eps });
  }
  // Few rows, no gradient, no adapter on gate/up (decoding): one dispatch instead of three.
  const adapted = ctx.adapters && (w.lora.has("gate_proj") || w.lora.has("up_proj"));
  const biases = { biasGate: w.gateBias, biasUp: w.upBias };
  const [wg, wu] = [fusedW(w.gate), fusedW(w.up)];
  const act = !adapted && swigluLinearApplies(x2, wg, wu, biases)
    ? swigluLinear(f16(x2), wg, wu, biases)
    : fuses("gate_proj") && fuses("up_proj")
    ? swigluProducts(x2, w.gate, w.up, biases)
    : swiglu(linear(x2, "gate_proj", w.gate, w.gateBias), linear(x2, "up_proj", w.up, w.upBias));
  if (ctx.nextNorm && fuses("down_proj")) {
    const [out, normed] = linearNorm(act, w.down, w.downBias, ctx.nextNorm, { residual: h1, eps });
    return { h: out, normed };
  }
  return { h: linear(act, "down_proj", w.down, w.downBias, h1), normed: null };
}
