/**
 * `config.json` of the Qwen2 / Llama family, typed and checked, and
 * written back in the shape `transformers` loads. Pure: callers pass text or parsed objects.
 */

import { architecture, type ModelType, SUPPORTED_MODEL_TYPES } from "./architectures.ts";

export { type ModelType, SUPPORTED_MODEL_TYPES };

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
  ropeTheta: number;
  /** `rope_scaling` as written (null when absent); the model decides whether it supports it. */
  ropeScaling: Record<string, unknown> | null;
  vocabSize: number;
  tieWordEmbeddings: boolean;
  /** Bias on q/k/v (and, for Llama, o) projections: always present in Qwen2 checkpoints. */
  attentionBias: boolean;
  maxPositionEmbeddings: number;
  bosTokenId: number | null;
  eosTokenId: number | number[];
  torchDtype: string;
  hiddenAct: string;
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
  "vocab_size",
  "tie_word_embeddings",
  "attention_bias",
  "max_position_embeddings",
  "bos_token_id",
  "eos_token_id",
  "torch_dtype",
  "dtype",
  "hidden_act",
]);

type Json = Record<string, unknown>;

/** Parses JSON text (or takes an object) that must be an object; `file` names it in errors. */
export function parseJsonObject(source: string | object, file: string): Record<string, unknown> {
  let raw: unknown = source;
  if (typeof source === "string") {
    try {
      raw = JSON.parse(source);
    } catch (e) {
      throw new Error(`${file}: not valid JSON (${(e as Error).message})`);
    }
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new Error(`${file}: expected a JSON object`);
  }
  return raw as Json;
}

/** Reads typed keys with messages that name the file and the key. */
class KeyReader {
  constructor(private readonly json: Json, private readonly file: string) {}

  private fail(key: string, want: string): never {
    const got = this.json[key];
    const shown = got === undefined ? "it is missing" : `got ${JSON.stringify(got)}`;
    throw new Error(`${this.file}: key "${key}" must be ${want}; ${shown}`);
  }

  positiveInt(key: string, fallback?: number): number {
    const v = this.json[key] ?? fallback;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
      this.fail(key, "a positive integer");
    }
    return v;
  }

  positiveNumber(key: string, fallback: number): number {
    const v = this.json[key] ?? fallback;
    if (typeof v !== "number" || !(v > 0) || !Number.isFinite(v)) {
      this.fail(key, "a positive number");
    }
    return v;
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.json[key] ?? fallback;
    if (typeof v !== "boolean") this.fail(key, "true or false");
    return v;
  }

  tokenId(key: string): number | null {
    const v = this.json[key] ?? null;
    if (v !== null && (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)) {
      this.fail(key, "a token id or null");
    }
    return v;
  }

  tokenIds(key: string): number | number[] {
    const v = this.json[key];
    const ok = (x: unknown) => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
    if (ok(v)) return v as number;
    if (Array.isArray(v) && v.length > 0 && v.every(ok)) return v as number[];
    return this.fail(key, "a token id or a non-empty list of them");
  }

  string(key: string, fallback: string): string {
    const v = this.json[key] ?? fallback;
    if (typeof v !== "string") this.fail(key, "a string");
    return v;
  }
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
  const hiddenSize = r.positiveInt("hidden_size");
  const numAttentionHeads = r.positiveInt("num_attention_heads");
  const numKeyValueHeads = r.positiveInt("num_key_value_heads", numAttentionHeads);
  if (numAttentionHeads % numKeyValueHeads !== 0) {
    throw new Error(
      `${file}: num_attention_heads (${numAttentionHeads}) is not divisible by ` +
        `num_key_value_heads (${numKeyValueHeads})`,
    );
  }
  if (json.head_dim == null && hiddenSize % numAttentionHeads !== 0) {
    throw new Error(
      `${file}: hidden_size (${hiddenSize}) is not divisible by num_attention_heads ` +
        `(${numAttentionHeads}) and no head_dim is given`,
    );
  }
  const ropeScaling = json.rope_scaling ?? null;
  if (ropeScaling !== null && (typeof ropeScaling !== "object" || Array.isArray(ropeScaling))) {
    throw new Error(`${file}: key "rope_scaling" must be an object or null`);
  }
  const spec = architecture(type);
  const architectures = json.architectures ?? [spec.className];
  if (!Array.isArray(architectures) || !architectures.every((a) => typeof a === "string")) {
    throw new Error(`${file}: key "architectures" must be a list of strings`);
  }
  const extra: Json = {};
  for (const [k, v] of Object.entries(json)) if (!TYPED_KEYS.has(k)) extra[k] = v;
  return {
    modelType: type,
    architectures: [...architectures],
    hiddenSize,
    intermediateSize: r.positiveInt("intermediate_size"),
    numHiddenLayers: r.positiveInt("num_hidden_layers"),
    numAttentionHeads,
    numKeyValueHeads,
    headDim: r.positiveInt("head_dim", hiddenSize / numAttentionHeads),
    rmsNormEps: r.positiveNumber("rms_norm_eps", 1e-6),
    ropeTheta: r.positiveNumber("rope_theta", 10000),
    ropeScaling: ropeScaling as Record<string, unknown> | null,
    vocabSize: r.positiveInt("vocab_size"),
    // Both transformers classes default to untied embeddings.
    tieWordEmbeddings: r.bool("tie_word_embeddings", false),
    attentionBias: r.bool("attention_bias", spec.attentionBias),
    maxPositionEmbeddings: r.positiveInt("max_position_embeddings", spec.maxPositionEmbeddings),
    bosTokenId: r.tokenId("bos_token_id"),
    eosTokenId: r.tokenIds("eos_token_id"),
    // Newer transformers write "dtype" instead of "torch_dtype".
    torchDtype: r.string(json.torch_dtype === undefined ? "dtype" : "torch_dtype", "float32"),
    hiddenAct: r.string("hidden_act", "silu"),
    extra,
  };
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
  const base = parseModelConfig(
    modelConfigToJson({
      architectures: [architecture(init.modelType).className],
      numKeyValueHeads: init.numAttentionHeads,
      headDim: init.hiddenSize / init.numAttentionHeads,
      rmsNormEps: 1e-6,
      ropeTheta: 10000,
      ropeScaling: null,
      tieWordEmbeddings: false,
      attentionBias: architecture(init.modelType).attentionBias,
      maxPositionEmbeddings: 2048,
      bosTokenId: null,
      torchDtype: "float32",
      hiddenAct: "silu",
      extra: {},
      ...init,
    }),
    { file: "<new config>" },
  );
  return base;
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
    rope_theta: c.ropeTheta,
    rope_scaling: c.ropeScaling,
    vocab_size: c.vocabSize,
    tie_word_embeddings: c.tieWordEmbeddings,
    max_position_embeddings: c.maxPositionEmbeddings,
    bos_token_id: c.bosTokenId,
    eos_token_id: c.eosTokenId,
    torch_dtype: c.torchDtype,
    hidden_act: c.hiddenAct,
  };
  // A family whose transformers class ignores attention_bias (Qwen2) gets the key only when it
  // differs from the built-in bias, to keep our own reader faithful.
  if (spec.readsAttentionBias || c.attentionBias !== spec.attentionBias) {
    typed.attention_bias = c.attentionBias;
  }
  const merged: Json = { ...defaults, ...c.extra, ...typed };
  return Object.fromEntries(Object.entries(merged).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** config.json text: two-space indented like transformers, with a trailing newline. */
export function serializeModelConfig(config: ModelConfig): string {
  return JSON.stringify(modelConfigToJson(config), null, 2) + "\n";
}
