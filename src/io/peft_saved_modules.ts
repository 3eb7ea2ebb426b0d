/**
 * A PEFT adapter's modules_to_save tensors applied to a causal LM, pure (browser-safe): which
 * tensors they replace and how a tied embedding and lm_head come apart, as peft's adapted model
 * computes with them.
 */
import type { ModelConfig } from "./hf_config.ts";
import { EMBED_WEIGHT, expectedTensorShapes, HEAD_WEIGHT } from "./hf_weights.ts";
import { peftSavedKey } from "./peft.ts";

/** How a causal LM's tensors change under an adapter's modules_to_save tensors. */
export interface SavedModules {
  /** The model's config; a tied one comes apart where the embedding or the head was saved. */
  config: ModelConfig;
  /** Tensors to put in place of the base's, by model name (f32). */
  replace: Map<string, Float32Array>;
  /** The untied lm_head starts as the base's embedding (only the embedding was saved). */
  headFromEmbedding: boolean;
}

/**
 * What a causal LM becomes with the modules_to_save tensors of a PEFT adapter (`saved`, by model
 * name), as PEFT's adapted model computes: each saved module replaces the base's. PEFT trains a
 * saved module as its own copy, so on a model whose lm_head is tied to the embedding, saving either
 * unties them (the other keeps the base's table) unless the adapter's `ensure_weight_tying` kept
 * the copies tied (`keepTie`). A name the model does not have, or a size that does not fit, is an
 * error naming `file`.
 */
export function savedModules(
  config: ModelConfig,
  saved: ReadonlyMap<string, Float32Array>,
  file: string,
  keepTie = false,
): SavedModules {
  const tableSaved = saved.has(EMBED_WEIGHT) || saved.has(HEAD_WEIGHT);
  const untie = config.tieWordEmbeddings && tableSaved && !keepTie;
  const out = untie ? { ...config, tieWordEmbeddings: false } : config;
  const replace = new Map(saved);
  if (out.tieWordEmbeddings && saved.has(HEAD_WEIGHT)) {
    // One table serves both: the embedding's copy if saved, else the head's.
    replace.set(EMBED_WEIGHT, saved.get(EMBED_WEIGHT) ?? saved.get(HEAD_WEIGHT)!);
    replace.delete(HEAD_WEIGHT);
  }
  const shapes = expectedTensorShapes(out);
  for (const [name, x] of replace) {
    const shape = shapes.get(name);
    if (!shape) {
      throw new Error(
        `${file}: modules_to_save tensor ${peftSavedKey(name)} is no tensor of this model`,
      );
    }
    const n = shape.reduce((a, b) => a * b, 1);
    if (x.length !== n) {
      throw new Error(
        `${file}: ${peftSavedKey(name)} has ${x.length} values, expected ${n} ([${shape}])`,
      );
    }
  }
  return { config: out, replace, headFromEmbedding: untie && !saved.has(HEAD_WEIGHT) };
}

/**
 * `tensors` with a {@link savedModules} plan applied: each replaced tensor made by `wrap` from its
 * f32 values and the base tensor it replaces (the embedding for an untied lm_head), and an untied
 * head that was not saved copied from the base's embedding.
 */
export function applySavedModules<T>(
  tensors: ReadonlyMap<string, T>,
  plan: SavedModules,
  wrap: (x: Float32Array, like: T) => T,
): Map<string, T> {
  const out = new Map(tensors);
  const like = (name: string) => tensors.get(name) ?? tensors.get(EMBED_WEIGHT)!;
  if (plan.headFromEmbedding) out.set(HEAD_WEIGHT, tensors.get(EMBED_WEIGHT)!);
  for (const [name, x] of plan.replace) out.set(name, wrap(x, like(name)));
  return out;
}
