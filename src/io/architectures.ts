/**
 * What differs between the decoder families we read and write, keyed by config.json's
 * `model_type`: the transformers class name, the defaults transformers assumes for keys a folder
 * may omit, and the keys transformers writes for a fresh model. The layers themselves are shared
 * (src/nn); a family whose layers differ also needs its branch there.
 */

export interface ArchitectureSpec {
  /** `architectures[0]` transformers writes. */
  className: string;
  /** q/k/v projection bias when config.json has no `attention_bias`. */
  attentionBias: boolean;
  /** Whether `attention_bias` also puts a bias on o_proj (Llama) or only on q/k/v (Qwen2). */
  outputBias: boolean;
  /** Whether transformers reads `attention_bias` (Qwen2 hard-codes its q/k/v bias). */
  readsAttentionBias: boolean;
  maxPositionEmbeddings: number;
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
    maxPositionEmbeddings: 32768,
    writtenDefaults: (c) => ({
      attention_dropout: 0.0,
      max_window_layers: c.numHiddenLayers,
      sliding_window: c.maxPositionEmbeddings,
      use_sliding_window: false,
    }),
  },
  llama: {
    className: "LlamaForCausalLM",
    attentionBias: false,
    outputBias: true,
    readsAttentionBias: true,
    maxPositionEmbeddings: 2048,
    writtenDefaults: () => ({ attention_dropout: 0.0, mlp_bias: false, pretraining_tp: 1 }),
  },
} as const satisfies Record<string, ArchitectureSpec>;

export type ModelType = keyof typeof ARCHITECTURES;
export const SUPPORTED_MODEL_TYPES = Object.keys(ARCHITECTURES) as ModelType[];

/** The spec of a model type. */
export function architecture(type: ModelType): ArchitectureSpec {
  return ARCHITECTURES[type];
}
