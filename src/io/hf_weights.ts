/**
 * The tensor names and shapes of a Qwen2 / Llama checkpoint in Hugging Face's naming, and checks
 * of a set of tensors against a config. Pure: shared by the Deno folder reader and the browser.
 */
import { type Dtype, fromFloat32, isFloatDtype, toFloat32 } from "./dtype.ts";
import type { ModelConfig } from "./hf_config.ts";
import { elementCount } from "./safetensors.ts";

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

/**
 * Every tensor the model needs, in model order (the order shards are filled in), with its shape.
 * `lm_head.weight` is absent when embeddings are tied, as in the checkpoints transformers writes.
 */
export function expectedTensorShapes(config: ModelConfig): Map<string, number[]> {
  const c = config;
  const q = c.numAttentionHeads * c.headDim;
  const kv = c.numKeyValueHeads * c.headDim;
  const out = new Map<string, number[]>();
  out.set("model.embed_tokens.weight", [c.vocabSize, c.hiddenSize]);
  for (let i = 0; i < c.numHiddenLayers; i++) {
    const p = `model.layers.${i}`;
    out.set(`${p}.input_layernorm.weight`, [c.hiddenSize]);
    out.set(`${p}.self_attn.q_proj.weight`, [q, c.hiddenSize]);
    out.set(`${p}.self_attn.k_proj.weight`, [kv, c.hiddenSize]);
    out.set(`${p}.self_attn.v_proj.weight`, [kv, c.hiddenSize]);
    if (c.attentionBias) {
      out.set(`${p}.self_attn.q_proj.bias`, [q]);
      out.set(`${p}.self_attn.k_proj.bias`, [kv]);
      out.set(`${p}.self_attn.v_proj.bias`, [kv]);
    }
    out.set(`${p}.self_attn.o_proj.weight`, [c.hiddenSize, q]);
    // Qwen2 has no output-projection bias; Llama's attention_bias covers all four projections.
    if (c.attentionBias && c.modelType === "llama") {
      out.set(`${p}.self_attn.o_proj.bias`, [c.hiddenSize]);
    }
    out.set(`${p}.post_attention_layernorm.weight`, [c.hiddenSize]);
    out.set(`${p}.mlp.gate_proj.weight`, [c.intermediateSize, c.hiddenSize]);
    out.set(`${p}.mlp.up_proj.weight`, [c.intermediateSize, c.hiddenSize]);
    out.set(`${p}.mlp.down_proj.weight`, [c.hiddenSize, c.intermediateSize]);
  }
  out.set("model.norm.weight", [c.hiddenSize]);
  if (!c.tieWordEmbeddings) out.set("lm_head.weight", [c.vocabSize, c.hiddenSize]);
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
