/**
 * The weight layout of the Qwen2 / Llama decoder under Hugging Face names, and a seeded HF-like
 * initialisation (normal, std `initializer_range` = 0.02; norms at one; biases at zero) so that a
 * fresh model written to a folder loads in `transformers` unchanged.
 */
import { normalSampler } from "../tensor/mod.ts";
import type { ModelConfig } from "../io/mod.ts";

/** Name of the value head of a critic: `score` as in HF's `*ForTokenClassification` (num_labels 1). */
export const VALUE_HEAD_WEIGHT = "score.weight";
export const VALUE_HEAD_BIAS = "score.bias";

/** Whether the o_proj has a bias: Llama's `attention_bias` covers it, Qwen2 never has one. */
export function hasOutputBias(config: ModelConfig): boolean {
  return config.modelType === "llama" && config.attentionBias;
}

/** Every parameter of the causal LM with its shape, in a stable order (HF names). */
export function weightShapes(config: ModelConfig): Map<string, number[]> {
  const c = config;
  const C = c.hiddenSize, D = c.headDim, I = c.intermediateSize;
  const qOut = c.numAttentionHeads * D, kvOut = c.numKeyValueHeads * D;
  const out = new Map<string, number[]>();
  out.set("model.embed_tokens.weight", [c.vocabSize, C]);
  for (let l = 0; l < c.numHiddenLayers; l++) {
    const p = `model.layers.${l}`;
    out.set(`${p}.input_layernorm.weight`, [C]);
    out.set(`${p}.self_attn.q_proj.weight`, [qOut, C]);
    out.set(`${p}.self_attn.k_proj.weight`, [kvOut, C]);
    out.set(`${p}.self_attn.v_proj.weight`, [kvOut, C]);
    if (c.attentionBias) {
      out.set(`${p}.self_attn.q_proj.bias`, [qOut]);
      out.set(`${p}.self_attn.k_proj.bias`, [kvOut]);
      out.set(`${p}.self_attn.v_proj.bias`, [kvOut]);
    }
    out.set(`${p}.self_attn.o_proj.weight`, [C, qOut]);
    if (hasOutputBias(c)) out.set(`${p}.self_attn.o_proj.bias`, [C]);
    out.set(`${p}.post_attention_layernorm.weight`, [C]);
    out.set(`${p}.mlp.gate_proj.weight`, [I, C]);
    out.set(`${p}.mlp.up_proj.weight`, [I, C]);
    out.set(`${p}.mlp.down_proj.weight`, [C, I]);
  }
  out.set("model.norm.weight", [C]);
  if (!c.tieWordEmbeddings) out.set("lm_head.weight", [c.vocabSize, C]);
  return out;
}

/** The critic's parameters: the trunk (no lm_head) plus the scalar value head. */
export function criticWeightShapes(config: ModelConfig): Map<string, number[]> {
  const out = weightShapes(config);
  out.delete("lm_head.weight");
  out.set(VALUE_HEAD_WEIGHT, [1, config.hiddenSize]);
  out.set(VALUE_HEAD_BIAS, [1]);
  return out;
}

/** HF-like initial weights for `shapes`: norms 1, biases 0, matrices N(0, std). */
export function initWeights(
  shapes: Map<string, number[]>,
  options: { seed?: number; std?: number } = {},
): Map<string, Float32Array> {
  const { seed = 0, std = 0.02 } = options;
  const normal = normalSampler(seed);
  const out = new Map<string, Float32Array>();
  for (const [name, shape] of shapes) {
    const n = shape.reduce((a, b) => a * b, 1);
    const w = new Float32Array(n);
    if (name.endsWith("layernorm.weight") || name === "model.norm.weight") w.fill(1);
    else if (!name.endsWith(".bias")) { for (let i = 0; i < n; i++) w[i] = normal() * std; }
    out.set(name, w);
  }
  return out;
}

/** Checks that `tensors` holds every expected weight with the right size; names what is wrong. */
export function checkWeights(
  shapes: Map<string, number[]>,
  tensors: ReadonlyMap<string, { length: number }>,
  what: string,
): void {
  const missing = [...shapes.keys()].filter((k) => !tensors.has(k));
  if (missing.length > 0) {
    const more = missing.length > 5 ? ` and ${missing.length - 5} more` : "";
    throw new Error(`${what}: missing weights ${missing.slice(0, 5).join(", ")}${more}`);
  }
  for (const [name, shape] of shapes) {
    const n = shape.reduce((a, b) => a * b, 1);
    const got = tensors.get(name)!.length;
    if (got !== n) {
      throw new Error(`${what}: ${name} has ${got} values, expected [${shape.join(", ")}] = ${n}`);
    }
  }
}
