/**
 * `config.json` of the Qwen2 / Qwen3 / Llama / Mistral families, typed and checked, and written
 * back in the shape `transformers` loads. Both spellings are read: 4.x (`rope_theta`,
 * `rope_scaling`, `torch_dtype`) and 5.x (`rope_parameters`, `dtype`); a rewrite keeps the
 * spelling the file came with, so it gains no key that contradicts the ones it had. Pure:
 * callers pass text or parsed objects.
 */

import { architecture, type ModelType, SUPPORTED_MODEL_TYPES } from "./architectures.ts";
import {
  type ConfigSpelling,
  KeyReader,
  parseJsonObject,
  readDtype,
  readRope,
  refuseUnsupported,
} from "./config_keys.ts";
import { parseRopeScaling, type RopeScaling } from "./rope_config.ts";

export { type ConfigSpelling, type ModelType, parseJsonObject, SUPPORTED_MODEL_TYPES };

export interface ModelConfig {
  modelType: ModelType;
  architectures: string[];
  hiddenSize: number;
  intermediateSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
  headDim: number;
  rmsNormEps: number;
  /** RoPE's base (`rope_theta`, or `rope_parameters.rope_theta`). */
  ropeTheta: number;
  /**
   * The scaling entries as written: `rope_scaling`'s object, or `rope_parameters` without its
   * `rope_theta`; null when absent. {@link ropeScalingOf} gives the checked, typed view.
   */
  ropeScaling: Record<string, unknown> | null;
  vocabSize: number;
  tieWordEmbeddings: boolean;
  /** Bias on q/k/v (and, where the family says so, o) projections. */
  attentionBias: boolean;
  /** Bias on gate/up/down (Llama's `mlp_bias`). */
  mlpBias: boolean;
  maxPositionEmbeddings: number;
  bosTokenId: number | null;
  eosTokenId: number | number[] | null; // null: the tokenizer's EOS alone ends generation
  torchDtype: string;
  hiddenAct: string;
  spelling: ConfigSpelling;
  /** Keys not interpreted above, kept so a read-then-write round trip loses nothing. */
  extra: Record<string, unknown>;
}

/** Keys that map onto typed fields; everything else lands in `extra`. */
const TYPED_KEYS = new Set([
  "model_type",
  "architectures",
  "hidden_size",
  "intermediate_size",
  "num_hidden_layers",
  "num_attention_heads",
  "num_key_value_heads",
  "head_dim",
  "rms_norm_eps",
  "rope_theta",
  "rope_scaling",
  "rope_parameters",
  "vocab_size",
  "tie_word_embeddings",
  "attention_bias",
  "mlp_bias",
  "max_position_embeddings",
  "bos_token_id",
  "eos_token_id",
  "torch_dtype",
  "dtype",
  "hidden_act",
]);

type Json = Record<string, unknown>;

/** The checked rope type and its numbers (throws naming the key when unsupported). */
export function ropeScalingOf(config: ModelConfig, file = "config.json"): RopeScaling {
  return parseRopeScaling(config.ropeScaling, {
    file,
    key: config.spelling.rope === "rope_theta" ? "rope_scaling" : "rope_parameters",
    maxPositionEmbeddings: config.maxPositionEmbeddings,
  });
}

/** Parses `config.json` text or object; `file` names it in errors. */
export function parseModelConfig(
  source: string | object,
  options: { file?: string } = {},
): ModelConfig {
  const file = options.file ?? "config.json";
  const json = parseJsonObject(source, file);
  const r = new KeyReader(json, file);
  const modelType = json.model_type;
  if (!SUPPORTED_MODEL_TYPES.includes(modelType as ModelType)) {
    throw new Error(
      `${file}: key "model_type" must be one of ${SUPPORTED_MODEL_TYPES.join(", ")}; got ` +
        JSON.stringify(modelType),
    );
  }
  const type = modelType as ModelType;
  const spec = architecture(type);
  const hiddenSize = r.positiveInt("hidden_size");
  const numAttentionHeads = r.positiveInt("num_attention_heads");
  const numKeyValueHeads = r.positiveInt("num_key_value_heads", numAttentionHeads);
  if (numAttentionHeads % numKeyValueHeads !== 0) {
    throw new Error(
      `${file}: num_attention_heads (${numAttentionHeads}) is not divisible by ` +
        `num_key_value_heads (${numKeyValueHeads})`,
    );
  }
  if (json.head_dim == null && spec.headDim === null && hiddenSize % numAttentionHeads !== 0) {
    throw new Error(
      `${file}: hidden_size (${hiddenSize}) is not divisible by num_attention_heads ` +
        `(${numAttentionHeads}) and no head_dim is given`,
    );
  }
  const numHiddenLayers = r.positiveInt("num_hidden_layers");
  const maxPositionEmbeddings = r.positiveInt(
    "max_position_embeddings",
    spec.maxPositionEmbeddings,
  );
  refuseUnsupported(json, spec, { file, numHiddenLayers, maxPositionEmbeddings });
  const attentionBias = r.bool("attention_bias", spec.attentionBias);
  if (attentionBias && !spec.readsAttentionBias && !spec.attentionBias) {
    throw new Error(
      `${file}: key "attention_bias" is true, but ${spec.className} has no attention bias`,
    );
  }
  const mlpBias = spec.readsMlpBias ? r.bool("mlp_bias", false) : false;
  if (!spec.readsMlpBias && json.mlp_bias === true) {
    throw new Error(`${file}: key "mlp_bias" is true, but ${spec.className} has no MLP bias`);
  }
  const architectures = json.architectures ?? [spec.className];
  if (!Array.isArray(architectures) || !architectures.every((a) => typeof a === "string")) {
    throw new Error(`${file}: key "architectures" must be a list of strings`);
  }
  const rope = readRope(json, r, file);
  const dtype = readDtype(json, r, file);
  const extra: Json = {};
  for (const [k, v] of Object.entries(json)) if (!TYPED_KEYS.has(k)) extra[k] = v;
  const config: ModelConfig = {
    modelType: type,
    architectures: [...architectures],
    hiddenSize,
    intermediateSize: r.positiveInt("intermediate_size"),
    numHiddenLayers,
    numAttentionHeads,
    numKeyValueHeads,
    headDim: r.positiveInt("head_dim", spec.headDim ?? hiddenSize / numAttentionHeads),
    rmsNormEps: r.positiveNumber("rms_norm_eps", 1e-6),
    ropeTheta: rope.theta,
    ropeScaling: rope.scaling,
    vocabSize: r.positiveInt("vocab_size"),
    // Every supported transformers class defaults to untied embeddings.
    tieWordEmbeddings: r.bool("tie_word_embeddings", false),
    attentionBias,
    mlpBias,
    maxPositionEmbeddings,
    bosTokenId: r.tokenId("bos_token_id"),
    eosTokenId: r.tokenIds("eos_token_id"),
    torchDtype: dtype.dtype,
    hiddenAct: r.string("hidden_act", "silu"),
    spelling: { rope: rope.spelling, dtype: dtype.spelling },
    extra,
  };
  ropeScalingOf(config, file); // refuses unknown rope types now rather than at the first forward
  return config;
}

/** What a caller must choose for a fresh model; everything else has the transformers default. */
export type ModelConfigInit =
  & Pick<
    ModelConfig,
    | "modelType"
    | "hiddenSize"
    | "intermediateSize"
    | "numHiddenLayers"
    | "numAttentionHeads"
    | "vocabSize"
    | "eosTokenId"
  >
  & Partial<ModelConfig>;

/** Builds a validated config for a new model (e.g. the tiny one the synthetic tasks train). */
export function makeModelConfig(init: ModelConfigInit): ModelConfig {
  const spec = architecture(init.modelType);
  return parseModelConfig(
    modelConfigToJson({
      architectures: [spec.className],
      numKeyValueHeads: init.numAttentionHeads,
      headDim: init.hiddenSize / init.numAttentionHeads,
      rmsNormEps: 1e-6,
      ropeTheta: 10000,
      ropeScaling: null,
      tieWordEmbeddings: false,
      attentionBias: spec.attentionBias,
      mlpBias: false,
      maxPositionEmbeddings: 2048,
      bosTokenId: null,
      torchDtype: "float32",
      hiddenAct: "silu",
      spelling: { rope: "rope_theta", dtype: "torch_dtype" },
      extra: {},
      ...init,
    }),
    { file: "<new config>" },
  );
}

/** The RoPE and dtype keys in the spelling the config came with. */
function spelledKeys(c: ModelConfig): Json {
  const out: Json = {};
  if (c.spelling.rope !== "rope_parameters") out.rope_theta = c.ropeTheta;
  if (c.spelling.rope === "rope_theta") out.rope_scaling = c.ropeScaling;
  else {
    const entries = Object.entries({ ...c.ropeScaling ?? {}, rope_theta: c.ropeTheta });
    out.rope_parameters = Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : 1)));
  }
  if (c.spelling.dtype !== "dtype") out.torch_dtype = c.torchDtype;
  if (c.spelling.dtype !== "torch_dtype") out.dtype = c.torchDtype;
  return out;
}

/** The config as `transformers` writes it (sorted keys), ready for JSON.stringify. */
export function modelConfigToJson(config: ModelConfig): Record<string, unknown> {
  const c = config;
  const spec = architecture(c.modelType);
  const defaults: Json = {
    initializer_range: 0.02,
    use_cache: true,
    ...spec.writtenDefaults(c),
  };
  const typed: Json = {
    architectures: c.architectures,
    model_type: c.modelType,
    hidden_size: c.hiddenSize,
    intermediate_size: c.intermediateSize,
    num_hidden_layers: c.numHiddenLayers,
    num_attention_heads: c.numAttentionHeads,
    num_key_value_heads: c.numKeyValueHeads,
    head_dim: c.headDim,
    rms_norm_eps: c.rmsNormEps,
    ...spelledKeys(c),
    vocab_size: c.vocabSize,
    tie_word_embeddings: c.tieWordEmbeddings,
    max_position_embeddings: c.maxPositionEmbeddings,
    bos_token_id: c.bosTokenId,
    eos_token_id: c.eosTokenId,
    hidden_act: c.hiddenAct,
  };
  // A family whose transformers class ignores attention_bias (Qwen2) gets the key only when it
  // differs from the built-in bias, to keep our own reader faithful.
  if (spec.readsAttentionBias || c.attentionBias !== spec.attentionBias) {
    typed.attention_bias = c.attentionBias;
  }
  if (spec.readsMlpBias) typed.mlp_bias = c.mlpBias;
  const merged: Json = { ...defaults, ...c.extra, ...typed };
  return Object.fromEntries(Object.entries(merged).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** config.json text: two-space indented like transformers, with a trailing newline. */
export function serializeModelConfig(config: ModelConfig): string {
  return JSON.stringify(modelConfigToJson(config), null, 2) + "\n";
}
