/**
 * What differs between the decoder families we read and write, keyed by config.json's
 * `model_type`: the transformers class name, the defaults transformers assumes for keys a folder
 * may omit, which optional parts (biases, q/k norm, sliding window) the family's transformers
 * class builds, and the keys transformers writes for a fresh model. The layers themselves are
 * shared (src/nn); a family whose layers differ also needs its branch there.
 */

export interface ArchitectureSpec {
  /** `architectures[0]` transformers writes. */
  className: string;
  /** q/k/v projection bias when config.json has no `attention_bias`. */
  attentionBias: boolean;
  /** Whether the q/k/v bias also puts one on o_proj (Llama, Qwen3) or not (Qwen2). */
  outputBias: boolean;
  /** Whether transformers reads `attention_bias` (Qwen2 and Mistral hard-code theirs). */
  readsAttentionBias: boolean;
  /** Whether transformers reads `mlp_bias` (Llama); the others have no MLP bias. */
  readsMlpBias: boolean;
  /** RMSNorm over each head's q and k before RoPE (Qwen3's `q_norm` / `k_norm`). */
  qkNorm: boolean;
  /** `head_dim` when config.json has none; null means hidden_size / num_attention_heads. */
  headDim: number | null;
  maxPositionEmbeddings: number;
  /**
   * How the class reads `sliding_window`: never (Llama), only with `use_sliding_window` on the
   * layers from `max_window_layers` up (Qwen2, Qwen3), or on every layer, 4096 when absent
   * (Mistral).
   */
  slidingWindow: "never" | "opt_in" | "always";
  /** Keys transformers writes with these values for a fresh config. */
  writtenDefaults(c: { numHiddenLayers: number; maxPositionEmbeddings: number }): Record<
    string,
    unknown
  >;
}

export const ARCHITECTURES = {
  qwen2: {
    className: "Qwen2ForCausalLM",
    attentionBias: true,
    outputBias: false,
    readsAttentionBias: false,
    readsMlpBias: false,
    qkNorm: false,
    headDim: null,
    maxPositionEmbeddings: 32768,
    slidingWindow: "opt_in",
    writtenDefaults: (c) => ({
      attention_dropout: 0.0,
      max_window_layers: c.numHiddenLayers,
      sliding_window: c.maxPositionEmbeddings,
      use_sliding_window: false,
    }),
  },
  qwen3: {
    className: "Qwen3ForCausalLM",
    attentionBias: false,
    outputBias: true,
    readsAttentionBias: true,
    readsMlpBias: false,
    qkNorm: true,
    headDim: 128,
    maxPositionEmbeddings: 32768,
    slidingWindow: "opt_in",
    writtenDefaults: (c) => ({
      attention_dropout: 0.0,
      max_window_layers: c.numHiddenLayers,
      sliding_window: null,
      use_sliding_window: false,
    }),
  },
  llama: {
    className: "LlamaForCausalLM",
    attentionBias: false,
    outputBias: true,
    readsAttentionBias: true,
    readsMlpBias: true,
    qkNorm: false,
    headDim: null,
    maxPositionEmbeddings: 2048,
    slidingWindow: "never",
    writtenDefaults: () => ({ attention_dropout: 0.0, pretraining_tp: 1 }),
  },
  mistral: {
    className: "MistralForCausalLM",
    attentionBias: false,
    outputBias: false,
    readsAttentionBias: false,
    readsMlpBias: false,
    qkNorm: false,
    headDim: null,
    maxPositionEmbeddings: 4096 * 32,
    slidingWindow: "always",
    writtenDefaults: () => ({ attention_dropout: 0.0, sliding_window: null }),
  },
} as const satisfies Record<string, ArchitectureSpec>;

export type ModelType = keyof typeof ARCHITECTURES;
export const SUPPORTED_MODEL_TYPES = Object.keys(ARCHITECTURES) as ModelType[];

/** The spec of a model type. */
export function architecture(type: ModelType): ArchitectureSpec {
  return ARCHITECTURES[type];
}
