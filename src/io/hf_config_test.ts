import assert from "node:assert/strict";
import {
  makeModelConfig,
  modelConfigToJson,
  parseModelConfig,
  serializeModelConfig,
} from "./hf_config.ts";
import { stopTokenIds } from "./generation_config.ts";

// Qwen/Qwen2.5-0.5B-Instruct's config.json as published.
const QWEN25_05B = {
  architectures: ["Qwen2ForCausalLM"],
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  hidden_act: "silu",
  hidden_size: 896,
  initializer_range: 0.02,
  intermediate_size: 4864,
  max_position_embeddings: 32768,
  max_window_layers: 21,
  model_type: "qwen2",
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-06,
  rope_theta: 1000000.0,
  sliding_window: 32768,
  tie_word_embeddings: true,
  torch_dtype: "bfloat16",
  transformers_version: "4.43.1",
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

Deno.test("config: Qwen2.5 parses with derived head_dim and the q/k/v bias", () => {
  const c = parseModelConfig(JSON.stringify(QWEN25_05B));
  assert.equal(c.modelType, "qwen2");
  assert.equal(c.headDim, 64);
  assert.equal(c.numKeyValueHeads, 2);
  assert.equal(c.attentionBias, true);
  assert.equal(c.tieWordEmbeddings, true);
  assert.equal(c.ropeTheta, 1e6);
  assert.equal(c.eosTokenId, 151645);
  assert.equal(c.torchDtype, "bfloat16");
  assert.deepEqual(c.architectures, ["Qwen2ForCausalLM"]);
  assert.equal(c.extra.max_window_layers, 21);
});

Deno.test("config: writing back keeps every key of the original", () => {
  const c = parseModelConfig(QWEN25_05B);
  const json = modelConfigToJson(c);
  for (const [k, v] of Object.entries(QWEN25_05B)) assert.deepEqual(json[k], v, k);
  assert.equal(json.head_dim, 64);
  assert.deepEqual(Object.keys(json), Object.keys(json).sort());
  assert.deepEqual(parseModelConfig(serializeModelConfig(c)), c);
});

Deno.test("config: Llama with an eos list, rope scaling and no bias", () => {
  const c = parseModelConfig({
    model_type: "llama",
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    vocab_size: 100,
    eos_token_id: [1, 2],
    bos_token_id: 0,
    rope_scaling: {
      rope_type: "llama3",
      factor: 8.0,
      low_freq_factor: 1.0,
      high_freq_factor: 4.0,
      original_max_position_embeddings: 8192,
    },
    dtype: "float16",
  });
  assert.equal(c.attentionBias, false);
  assert.deepEqual(c.eosTokenId, [1, 2]);
  assert.deepEqual(c.architectures, ["LlamaForCausalLM"]);
  assert.equal(c.torchDtype, "float16");
  assert.equal(c.maxPositionEmbeddings, 2048);
  const json = modelConfigToJson(c);
  assert.equal(json.attention_bias, false);
  assert.equal(json.mlp_bias, false);
  // Written back in the spelling it came with: dtype, not torch_dtype.
  assert.equal(json.dtype, "float16");
  assert.equal("torch_dtype" in json, false);
});

Deno.test("config: errors name the file and the key", () => {
  const bad = (patch: Record<string, unknown>) => ({ ...QWEN25_05B, ...patch });
  const cases: [unknown, RegExp][] = [
    [
      bad({ hidden_size: undefined }),
      /m\/config\.json: key "hidden_size" must be a positive integer; it is missing/,
    ],
    [bad({ vocab_size: "big" }), /key "vocab_size" must be a positive integer; got "big"/],
    [
      bad({ model_type: "gpt2" }),
      /key "model_type" must be one of qwen2, qwen3, llama, mistral; got "gpt2"/,
    ],
    [
      bad({ num_key_value_heads: 3 }),
      /num_attention_heads \(14\) is not divisible by num_key_value_heads \(3\)/,
    ],
    [bad({ hidden_size: 900 }), /hidden_size \(900\) is not divisible/],
    [
      bad({ eos_token_id: [] }),
      /key "eos_token_id" must be a token id, a non-empty list of them, or null/,
    ],
    [bad({ tie_word_embeddings: "yes" }), /key "tie_word_embeddings" must be true or false/],
    [bad({ rms_norm_eps: -1 }), /key "rms_norm_eps" must be a positive number/],
  ];
  for (const [json, pattern] of cases) {
    assert.throws(() => parseModelConfig(JSON.stringify(json), { file: "m/config.json" }), pattern);
  }
  assert.throws(
    () => parseModelConfig("{", { file: "m/config.json" }),
    /m\/config\.json: not valid JSON/,
  );
});

Deno.test("config: a fresh tiny model gets transformers' defaults", () => {
  const c = makeModelConfig({
    modelType: "qwen2",
    hiddenSize: 32,
    intermediateSize: 64,
    numHiddenLayers: 2,
    numAttentionHeads: 4,
    numKeyValueHeads: 2,
    vocabSize: 64,
    eosTokenId: 1,
    tieWordEmbeddings: true,
  });
  assert.equal(c.headDim, 8);
  assert.equal(c.attentionBias, true);
  const json = modelConfigToJson(c);
  assert.deepEqual(json.architectures, ["Qwen2ForCausalLM"]);
  assert.equal(json.use_sliding_window, false);
  assert.equal(json.max_window_layers, 2);
  assert.equal(json.hidden_act, "silu");
  assert.equal("attention_bias" in json, false);
});

Deno.test("config: eos_token_id null or absent (transformers' default) is no config EOS", () => {
  const base = {
    model_type: "qwen2",
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    vocab_size: 96,
  };
  assert.equal(parseModelConfig({ ...base, eos_token_id: null }).eosTokenId, null);
  const absent = parseModelConfig(base);
  assert.equal(absent.eosTokenId, null);
  assert.equal(parseModelConfig(serializeModelConfig(absent)).eosTokenId, null);
  assert.deepEqual(stopTokenIds(5, { configEos: absent.eosTokenId }), [5]);
});
