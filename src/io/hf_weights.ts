/**
 * The tensor names and shapes of a Qwen2 / Qwen3 / Llama / Mistral checkpoint in Hugging Face's
 * naming, and checks of a set of tensors against a config. Pure: shared by the Deno folder reader
 * and the browser.
 */
import { architecture } from "./architectures.ts";
import { type Dtype, fromFloat32, isFloatDtype, toFloat32 } from "./dtype.ts";
import type { ModelConfig } from "./hf_config.ts";
import { elementCount } from "./safetensors.ts";

/** The token embedding's and the output head's tensor names (the head is absent when tied). */
export const EMBED_WEIGHT = "model.embed_tokens.weight";
export const HEAD_WEIGHT = "lm_head.weight";

/** One tensor of a model folder: raw little-endian bytes plus dtype and shape. */
export interface HfTensor {
  dtype: Dtype;
  shape: number[];
  data: Uint8Array;
}

/** Wraps f32 values as an F32 tensor (the bytes are copied). */
export function floatTensor(shape: number[], values: Float32Array): HfTensor {
  if (elementCount(shape) !== values.length) {
    throw new Error(`shape ${JSON.stringify(shape)} does not hold ${values.length} values`);
  }
  return { dtype: "F32", shape: [...shape], data: fromFloat32(values, "F32") };
}

/** The tensor's values as f32 (F32, F16 or BF16 tensors only). */
export function tensorToFloat32(tensor: HfTensor): Float32Array {
  if (!isFloatDtype(tensor.dtype)) throw new Error(`cannot read ${tensor.dtype} as float32`);
  return toFloat32(tensor.data, tensor.dtype);
}

/** Whether o_proj has a bias: the families whose attention bias covers all four projections. */
export function hasOutputBias(config: ModelConfig): boolean {
  return config.attentionBias && architecture(config.modelType).outputBias;
}

/**
 * Every tensor the model needs, in model order (the order shards are filled in), with its shape.
 * `lm_head.weight` is absent when embeddings are tied, as in the checkpoints transformers writes.
 */
export function expectedTensorShapes(config: ModelConfig): Map<string, number[]> {
  const c = config;
  const C = c.hiddenSize, I = c.intermediateSize, D = c.headDim;
  const q = c.numAttentionHeads * D;
  const kv = c.numKeyValueHeads * D;
  const qkNorm = architecture(c.modelType).qkNorm;
  const out = new Map<string, number[]>();
  out.set(EMBED_WEIGHT, [c.vocabSize, C]);
  for (let i = 0; i < c.numHiddenLayers; i++) {
    const p = `model.layers.${i}`;
    out.set(`${p}.input_layernorm.weight`, [C]);
    out.set(`${p}.self_attn.q_proj.weight`, [q, C]);
    out.set(`${p}.self_attn.k_proj.weight`, [kv, C]);
    out.set(`${p}.self_attn.v_proj.weight`, [kv, C]);
    if (c.attentionBias) {
      out.set(`${p}.self_attn.q_proj.bias`, [q]);
      out.set(`${p}.self_attn.k_proj.bias`, [kv]);
      out.set(`${p}.self_attn.v_proj.bias`, [kv]);
    }
    out.set(`${p}.self_attn.o_proj.weight`, [C, q]);
    if (hasOutputBias(c)) out.set(`${p}.self_attn.o_proj.bias`, [C]);
    if (qkNorm) {
      // Qwen3: one RMSNorm weight over head_dim, shared by every head.
      out.set(`${p}.self_attn.q_norm.weight`, [D]);
      out.set(`${p}.self_attn.k_norm.weight`, [D]);
    }
    out.set(`${p}.post_attention_layernorm.weight`, [C]);
    out.set(`${p}.mlp.gate_proj.weight`, [I, C]);
    out.set(`${p}.mlp.up_proj.weight`, [I, C]);
    out.set(`${p}.mlp.down_proj.weight`, [C, I]);
    if (c.mlpBias) {
      out.set(`${p}.mlp.gate_proj.bias`, [I]);
      out.set(`${p}.mlp.up_proj.bias`, [I]);
      out.set(`${p}.mlp.down_proj.bias`, [C]);
    }
  }
  out.set("model.norm.weight", [C]);
  if (!c.tieWordEmbeddings) out.set(HEAD_WEIGHT, [c.vocabSize, C]);
  return out;
}

/**
 * Throws, naming `where` and the tensor, when a needed tensor is missing or has the wrong shape.
 * Extra tensors are allowed: checkpoints often carry buffers the model rebuilds anyway.
 */
export function checkModelTensors(
  config: ModelConfig,
  tensors: ReadonlyMap<string, { shape: readonly number[] }>,
  where: string,
): void {
  const missing: string[] = [];
  for (const [name, shape] of expectedTensorShapes(config)) {
    const t = tensors.get(name);
    if (!t) {
      missing.push(name);
      continue;
    }
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new Error(
        `${where}: tensor "${name}" has shape ${JSON.stringify(t.shape)}, the config implies ` +
          JSON.stringify(shape),
      );
    }
  }
  if (missing.length > 0) {
    const shown = missing.slice(0, 5).map((n) => `"${n}"`).join(", ");
    const more = missing.length > 5 ? ` and ${missing.length - 5} more` : "";
    throw new Error(`${where}: missing tensor ${shown}${more}`);
  }
}
