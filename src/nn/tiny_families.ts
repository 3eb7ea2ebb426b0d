/**
 * A tiny config.json for every decoder family and RoPE variant we read, spelled the way
 * transformers writes that family's config: 4.x (`rope_theta`, `rope_scaling`, `torch_dtype`) and
 * 5.x (`rope_parameters`, `dtype`, `layer_types`). Shapes are small enough for the CPU adapter;
 * the vocabulary is the character tokenizer's (64 ids, `<eos>` = 1), so each folder also works
 * with the synthetic tasks. The architecture tests and the transformers parity script both use
 * these, with seeded weights from `tinyWeights`.
 */

type Json = Record<string, unknown>;

const SHAPE = {
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 64,
  bos_token_id: null,
  eos_token_id: 1,
  hidden_act: "silu",
  initializer_range: 0.02,
  use_cache: true,
};

const layerTypes = Array.from({ length: SHAPE.num_hidden_layers }, () => "full_attention");

const qwen2: Json = {
  ...SHAPE,
  architectures: ["Qwen2ForCausalLM"],
  model_type: "qwen2",
  attention_dropout: 0.0,
  max_position_embeddings: 128,
  max_window_layers: 2,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
  use_sliding_window: false,
};

const qwen3: Json = {
  ...SHAPE,
  architectures: ["Qwen3ForCausalLM"],
  model_type: "qwen3",
  attention_bias: false,
  attention_dropout: 0.0,
  // Qwen3 sets head_dim apart from hidden_size / num_attention_heads.
  head_dim: 16,
  max_position_embeddings: 128,
  max_window_layers: 2,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
  use_sliding_window: false,
};

const llama: Json = {
  ...SHAPE,
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
  attention_bias: false,
  attention_dropout: 0.0,
  head_dim: 8,
  max_position_embeddings: 128,
  mlp_bias: false,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  tie_word_embeddings: false,
};

// Llama 3.1's scaling with an original context of 256, so that at head_dim 8 one frequency is
// kept, one blended and two divided by the factor.
const llama3Scaling = {
  factor: 8.0,
  high_freq_factor: 4.0,
  low_freq_factor: 1.0,
  original_max_position_embeddings: 256,
  rope_type: "llama3",
};

/** config.json per family and spelling (name -> JSON object). */
export const TINY_FAMILIES: Record<string, Json> = {
  "qwen2.5 (4.x)": {
    ...qwen2,
    rope_scaling: null,
    rope_theta: 1000000.0,
    sliding_window: 128,
    torch_dtype: "float32",
  },
  "qwen2.5 (5.x)": {
    ...qwen2,
    dtype: "float32",
    layer_types: layerTypes,
    rope_parameters: { rope_theta: 1000000.0, rope_type: "default" },
    sliding_window: null,
  },
  "qwen3 (4.x)": {
    ...qwen3,
    rope_scaling: null,
    rope_theta: 1000000,
    sliding_window: null,
    torch_dtype: "float32",
  },
  "qwen3 (5.x, o bias, untied)": {
    ...qwen3,
    attention_bias: true,
    dtype: "float32",
    layer_types: layerTypes,
    rope_parameters: { rope_theta: 1000000, rope_type: "default" },
    sliding_window: null,
    tie_word_embeddings: false,
  },
  "llama 2 (4.x)": { ...llama, rope_scaling: null, rope_theta: 10000.0, torch_dtype: "float32" },
  "llama 3 (4.x)": { ...llama, rope_scaling: null, rope_theta: 500000.0, torch_dtype: "float32" },
  "llama 3.1 (4.x)": {
    ...llama,
    max_position_embeddings: 2048,
    rope_scaling: llama3Scaling,
    rope_theta: 500000.0,
    torch_dtype: "float32",
  },
  "llama 3.1 (5.x)": {
    ...llama,
    dtype: "float32",
    max_position_embeddings: 2048,
    rope_parameters: { ...llama3Scaling, rope_theta: 500000.0 },
  },
  "llama 3.2 (4.x, tied)": {
    ...llama,
    max_position_embeddings: 2048,
    rope_scaling: llama3Scaling,
    rope_theta: 500000.0,
    tie_word_embeddings: true,
    torch_dtype: "float32",
  },
  "smollm2 (4.x)": {
    ...llama,
    rope_scaling: null,
    rope_theta: 100000,
    tie_word_embeddings: true,
    torch_dtype: "float32",
  },
  "llama, attention and mlp bias (4.x)": {
    ...llama,
    attention_bias: true,
    mlp_bias: true,
    rope_scaling: null,
    rope_theta: 10000.0,
    torch_dtype: "float32",
  },
  "llama, linear scaling (4.x)": {
    ...llama,
    rope_scaling: { factor: 2.0, type: "linear" },
    rope_theta: 10000.0,
    torch_dtype: "float32",
  },
  // max_position_embeddings 8: sequences longer than that grow the NTK base.
  "llama, dynamic scaling (4.x)": {
    ...llama,
    max_position_embeddings: 8,
    rope_scaling: { factor: 2.0, type: "dynamic" },
    rope_theta: 10000.0,
    torch_dtype: "float32",
  },
  "qwen2, yarn (5.x)": {
    ...qwen2,
    dtype: "float32",
    layer_types: layerTypes,
    rope_parameters: {
      factor: 4.0,
      original_max_position_embeddings: 32,
      rope_theta: 1000000.0,
      rope_type: "yarn",
    },
    sliding_window: null,
  },
  "mistral (4.x)": {
    ...SHAPE,
    architectures: ["MistralForCausalLM"],
    model_type: "mistral",
    attention_dropout: 0.0,
    head_dim: 8,
    max_position_embeddings: 128,
    rms_norm_eps: 1e-5,
    rope_theta: 1000000.0,
    sliding_window: null,
    tie_word_embeddings: false,
    torch_dtype: "float32",
  },
};
