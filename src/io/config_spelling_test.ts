import assert from "node:assert/strict";
import {
  makeModelConfig,
  modelConfigToJson,
  parseModelConfig,
  ropeScalingOf,
} from "./hf_config.ts";

const fullAttention = (n: number) => Array.from({ length: n }, () => "full_attention");

// Qwen2.5-0.5B-Instruct as transformers 5 saves it: rope_parameters, dtype, layer_types.
const QWEN25_V5 = {
  architectures: ["Qwen2ForCausalLM"],
  attention_dropout: 0.0,
  bos_token_id: 151643,
  dtype: "bfloat16",
  eos_token_id: 151645,
  hidden_act: "silu",
  hidden_size: 896,
  initializer_range: 0.02,
  intermediate_size: 4864,
  layer_types: fullAttention(24),
  max_position_embeddings: 32768,
  max_window_layers: 21,
  model_type: "qwen2",
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-06,
  rope_parameters: { rope_theta: 1000000.0, rope_type: "default" },
  sliding_window: null,
  tie_word_embeddings: true,
  transformers_version: "5.0.0",
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

// Llama-3.2-1B as published (transformers 4.x spelling).
const LLAMA32_V4 = {
  architectures: ["LlamaForCausalLM"],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 128000,
  eos_token_id: 128001,
  head_dim: 64,
  hidden_act: "silu",
  hidden_size: 2048,
  initializer_range: 0.02,
  intermediate_size: 8192,
  max_position_embeddings: 131072,
  mlp_bias: false,
  model_type: "llama",
  num_attention_heads: 32,
  num_hidden_layers: 16,
  num_key_value_heads: 8,
  pretraining_tp: 1,
  rms_norm_eps: 1e-05,
  rope_scaling: {
    factor: 32.0,
    high_freq_factor: 4.0,
    low_freq_factor: 1.0,
    original_max_position_embeddings: 8192,
    rope_type: "llama3",
  },
  rope_theta: 500000.0,
  tie_word_embeddings: true,
  torch_dtype: "bfloat16",
  transformers_version: "4.45.0.dev0",
  use_cache: true,
  vocab_size: 128256,
};

Deno.test("config: a transformers 5 folder keeps rope_parameters and dtype, gains no rope_theta", () => {
  const c = parseModelConfig(QWEN25_V5);
  assert.equal(c.ropeTheta, 1e6);
  assert.equal(c.torchDtype, "bfloat16");
  assert.deepEqual(c.spelling, { rope: "rope_parameters", dtype: "dtype" });
  assert.equal(ropeScalingOf(c).type, "default");
  const json = modelConfigToJson(c);
  for (const [k, v] of Object.entries(QWEN25_V5)) assert.deepEqual(json[k], v, k);
  assert.equal("rope_theta" in json, false);
  assert.equal("rope_scaling" in json, false);
  assert.equal("torch_dtype" in json, false);
  // A changed base and dtype land in the keys the file already had.
  const saved = modelConfigToJson({ ...c, ropeTheta: 5e5, torchDtype: "float32" });
  assert.deepEqual(saved.rope_parameters, { rope_theta: 5e5, rope_type: "default" });
  assert.equal(saved.dtype, "float32");
});

Deno.test("config: Llama 3.2 in 4.x spelling round-trips key for key, llama3 scaling read", () => {
  const c = parseModelConfig(LLAMA32_V4);
  assert.deepEqual(c.spelling, { rope: "rope_theta", dtype: "torch_dtype" });
  const s = ropeScalingOf(c);
  assert.equal(s.type, "llama3");
  assert.equal(s.factor, 32);
  assert.equal(s.originalMaxPositionEmbeddings, 8192);
  assert.deepEqual([s.lowFreqFactor, s.highFreqFactor], [1, 4]);
  const json = modelConfigToJson(c);
  for (const [k, v] of Object.entries(LLAMA32_V4)) assert.deepEqual(json[k], v, k);
  assert.equal("rope_parameters" in json, false);
  assert.equal("dtype" in json, false);
});

Deno.test("config: the 5.x spelling of Llama 3.1 reads the same scaling; both spellings together", () => {
  const { rope_scaling, rope_theta: _, torch_dtype: __, ...rest } = LLAMA32_V4;
  const v5 = { ...rest, dtype: "bfloat16", rope_parameters: { ...rope_scaling, rope_theta: 5e5 } };
  const c = parseModelConfig(v5);
  assert.equal(c.ropeTheta, 5e5);
  assert.deepEqual(ropeScalingOf(c), ropeScalingOf(parseModelConfig(LLAMA32_V4)));
  assert.deepEqual(modelConfigToJson(c).rope_parameters, v5.rope_parameters);
  // A folder holding rope_theta as well keeps both, equal.
  const both = parseModelConfig({ ...v5, rope_theta: 5e5 });
  assert.equal(both.spelling.rope, "both");
  const json = modelConfigToJson({ ...both, ropeTheta: 1e4 });
  assert.equal(json.rope_theta, 1e4);
  assert.equal((json.rope_parameters as Record<string, unknown>).rope_theta, 1e4);
});

Deno.test("config: Qwen3 defaults head_dim to 128 and reads attention_bias; Mistral without window", () => {
  const qwen3 = parseModelConfig({
    model_type: "qwen3",
    hidden_size: 1024,
    intermediate_size: 3072,
    num_hidden_layers: 2,
    num_attention_heads: 16,
    num_key_value_heads: 8,
    vocab_size: 100,
    eos_token_id: 1,
  });
  assert.equal(qwen3.headDim, 128);
  assert.equal(qwen3.attentionBias, false);
  assert.deepEqual(qwen3.architectures, ["Qwen3ForCausalLM"]);
  const mistral = parseModelConfig({
    model_type: "mistral",
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    vocab_size: 100,
    eos_token_id: 2,
    sliding_window: null,
  });
  assert.equal(mistral.maxPositionEmbeddings, 131072);
  assert.equal(modelConfigToJson(mistral).sliding_window, null);
});

Deno.test("config: a fresh config can be spelled as transformers 5 writes it", () => {
  const c = makeModelConfig({
    modelType: "qwen3",
    hiddenSize: 32,
    intermediateSize: 48,
    numHiddenLayers: 1,
    numAttentionHeads: 4,
    vocabSize: 40,
    eosTokenId: 1,
    ropeTheta: 1e6,
    spelling: { rope: "rope_parameters", dtype: "dtype" },
  });
  const json = modelConfigToJson(c);
  assert.deepEqual(json.rope_parameters, { rope_theta: 1e6 });
  assert.equal(json.dtype, "float32");
  assert.equal("rope_theta" in json, false);
  assert.deepEqual(parseModelConfig(json), c);
});

Deno.test("config: what the decoder cannot honour is refused, naming the key and its value", () => {
  const llama = (patch: Record<string, unknown>) => ({ ...LLAMA32_V4, ...patch });
  const qwen = (patch: Record<string, unknown>) => ({ ...QWEN25_V5, ...patch });
  const base = {
    ...LLAMA32_V4,
    model_type: "mistral",
    attention_bias: undefined,
    mlp_bias: undefined,
  };
  const cases: [unknown, RegExp][] = [
    [
      llama({ rope_scaling: { rope_type: "longrope", factor: 2 } }),
      /key "rope_scaling.rope_type" is "longrope", a rope type we cannot compute/,
    ],
    [
      qwen({ rope_parameters: { rope_theta: 1e6, rope_type: "su" } }),
      /key "rope_parameters.rope_type" is "su"/,
    ],
    [llama({ rope_scaling: { type: "linear" } }), /key "rope_scaling.factor" must be a positive/],
    [
      { ...base, sliding_window: 4096 },
      /key "sliding_window" is 4096: sliding-window attention \(window 4096 < max_position/,
    ],
    [{ ...base }, /key "sliding_window" is 4096/], // Mistral's default when the key is absent
    [
      qwen({ use_sliding_window: true, sliding_window: 4096, layer_types: undefined }),
      /key "use_sliding_window" is true: sliding-window .*layers 21 and up slide/,
    ],
    [
      qwen({ sliding_window: 1024, layer_types: [...fullAttention(23), "sliding_attention"] }),
      /key "layer_types" is .*sliding-window attention/,
    ],
    [llama({ num_experts: 8 }), /key "num_experts" is 8: mixture-of-experts/],
    [llama({ num_local_experts: 8 }), /key "num_local_experts" is 8/],
    [llama({ hidden_act: "gelu" }), /key "hidden_act" is "gelu": only silu/],
    [llama({ partial_rotary_factor: 0.5 }), /key "partial_rotary_factor" is 0.5/],
    [
      qwen({ rope_scaling: { rope_type: "linear", factor: 2 } }),
      /both "rope_scaling" and "rope_parameters" are set and differ/,
    ],
    [
      qwen({ torch_dtype: "float16" }),
      /"torch_dtype" \("float16"\) and "dtype" \("bfloat16"\) disagree/,
    ],
    [
      { ...base, sliding_window: null, attention_bias: true },
      /MistralForCausalLM has no attention bias/,
    ],
    [qwen({ mlp_bias: true }), /key "mlp_bias" is true, but Qwen2ForCausalLM has no MLP bias/],
  ];
  for (const [json, pattern] of cases) {
    assert.throws(() => parseModelConfig(JSON.stringify(json), { file: "m/config.json" }), pattern);
  }
  // A window as long as the context never binds, and sliding_window without use_sliding_window
  // is what Qwen2.5 folders carry: both load.
  parseModelConfig({ ...base, sliding_window: 131072 });
  parseModelConfig(qwen({ sliding_window: 32768, use_sliding_window: false }));
});
