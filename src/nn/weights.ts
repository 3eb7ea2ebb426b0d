/**
 * The weight layout of the decoder under Hugging Face names, and a seeded HF-like
 * initialisation (normal, std `initializer_range` = 0.02; norms at one; biases at zero) so that a
 * fresh model written to a folder loads in `transformers` unchanged.
 */
import { normalSampler, Tensor } from "../tensor/mod.ts";
import { expectedTensorShapes, type ModelConfig } from "../io/mod.ts";

export { hasOutputBias } from "../io/mod.ts";

/** Name of the value head of a critic: `score` as in HF's `*ForTokenClassification` (num_labels 1). */
export const VALUE_HEAD_WEIGHT = "score.weight";
export const VALUE_HEAD_BIAS = "score.bias";

/** Every parameter of the causal LM with its shape, in model order (HF names; io's one list). */
export function weightShapes(config: ModelConfig): Map<string, number[]> {
  return expectedTensorShapes(config);
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
    // input/post_attention_layernorm, model.norm and Qwen3's q_norm / k_norm start at one.
    if (name.endsWith("norm.weight")) w.fill(1);
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

/** Every tensor in a parameter record (a layer's), nested records and arrays included. */
export function tensorsIn(value: unknown, out: Tensor[] = []): Tensor[] {
  if (value instanceof Tensor) out.push(value);
  else if (Array.isArray(value)) { for (const v of value) tensorsIn(v, out); }
  else if (value instanceof Map) { for (const v of value.values()) tensorsIn(v, out); }
  else if (value !== null && typeof value === "object") {
    for (const v of Object.values(value)) tensorsIn(v, out);
  }
  return out;
}
