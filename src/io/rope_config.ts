/**
 * RoPE settings of a config.json, read as transformers 4.x writes them (`rope_theta` beside a
 * `rope_scaling` object) and as 5.x does (one `rope_parameters` object holding `rope_theta` too),
 * and checked into a typed {@link RopeScaling}. The frequency formulas themselves live in
 * src/nn (`ropeFrequencies`); this file only says which formula and with which numbers.
 *
 * Where transformers versions disagree the 5.x reading is taken: YaRN uses its explicit `factor`
 * (4.5x replaced it by max_position_embeddings / original_max_position_embeddings), and
 * `original_max_position_embeddings` defaults to `max_position_embeddings`.
 */

/** The rope types we compute; any other is refused by name. */
export const ROPE_TYPES = ["default", "linear", "dynamic", "llama3", "yarn"] as const;
export type RopeType = typeof ROPE_TYPES[number];

/** One rope type and every number its formula needs, defaults filled in as transformers does. */
export interface RopeScaling {
  type: RopeType;
  /** linear, dynamic, llama3, yarn: the context extension factor (1 for default). */
  factor: number;
  /** llama3, yarn: the pretraining context length. */
  originalMaxPositionEmbeddings: number;
  /** llama3: wavelength bounds as fractions of the original context. */
  lowFreqFactor: number;
  highFreqFactor: number;
  /** yarn: the ramp between interpolated and extrapolated dimensions (defaults 32 and 1). */
  betaFast: number;
  betaSlow: number;
  /** yarn: round the ramp's ends to whole dimensions (transformers' `truncate`, default true). */
  truncate: boolean;
  /** Factor on cos and sin (yarn's attention factor; 1 for the others). */
  attentionScaling: number;
}

type Json = Record<string, unknown>;

/** Where the settings were read, for messages: file and key (`rope_scaling` / `rope_parameters`). */
export interface RopeSource {
  file: string;
  key: string;
  maxPositionEmbeddings: number;
}

function fail(src: RopeSource, field: string, want: string, got: unknown): never {
  const shown = got === undefined ? "it is missing" : `got ${JSON.stringify(got)}`;
  throw new Error(`${src.file}: key "${src.key}.${field}" must be ${want}; ${shown}`);
}

function positive(raw: Json, field: string, src: RopeSource, fallback?: number): number {
  const v = raw[field] ?? fallback;
  if (typeof v !== "number" || !(v > 0) || !Number.isFinite(v)) {
    fail(src, field, "a positive number", raw[field]);
  }
  return v;
}

/** transformers' YaRN magnitude correction: 1 at scale <= 1, else 0.1 * m * ln(scale) + 1. */
export function yarnMscale(scale: number, m = 1): number {
  return scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1;
}

/**
 * Typed rope scaling from the object config.json holds (`rope_scaling`, or `rope_parameters`
 * whose `rope_theta` the caller has taken out); null means plain RoPE. Unknown rope types, a
 * `partial_rotary_factor` other than 1 and missing or non-numeric fields are errors naming the key.
 */
export function parseRopeScaling(raw: Json | null, src: RopeSource): RopeScaling {
  const plain: RopeScaling = {
    type: "default",
    factor: 1,
    originalMaxPositionEmbeddings: src.maxPositionEmbeddings,
    lowFreqFactor: 1,
    highFreqFactor: 4,
    betaFast: 32,
    betaSlow: 1,
    truncate: true,
    attentionScaling: 1,
  };
  if (raw === null) return plain;
  const typeKey = raw.rope_type !== undefined ? "rope_type" : "type";
  const type = raw[typeKey] ?? "default";
  if (!ROPE_TYPES.includes(type as RopeType)) {
    throw new Error(
      `${src.file}: key "${src.key}.${typeKey}" is ${JSON.stringify(type)}, a rope type we ` +
        `cannot compute (supported: ${ROPE_TYPES.join(", ")})`,
    );
  }
  const partial = raw.partial_rotary_factor;
  if (partial !== undefined && partial !== null && partial !== 1) {
    throw new Error(
      `${src.file}: key "${src.key}.partial_rotary_factor" is ${JSON.stringify(partial)}; ` +
        "RoPE on part of each head is not supported (only 1)",
    );
  }
  const original = positive(
    raw,
    "original_max_position_embeddings",
    src,
    src.maxPositionEmbeddings,
  );
  const out: RopeScaling = {
    ...plain,
    type: type as RopeType,
    originalMaxPositionEmbeddings: original,
  };
  switch (out.type) {
    case "default":
      return out;
    case "linear":
    case "dynamic":
      return { ...out, factor: positive(raw, "factor", src) };
    case "llama3": {
      const low = positive(raw, "low_freq_factor", src);
      const high = positive(raw, "high_freq_factor", src);
      if (high <= low) {
        fail(src, "high_freq_factor", `larger than low_freq_factor (${low})`, raw.high_freq_factor);
      }
      return {
        ...out,
        factor: positive(raw, "factor", src),
        lowFreqFactor: low,
        highFreqFactor: high,
      };
    }
    case "yarn":
      return yarn(raw, out, src);
  }
}

function yarn(raw: Json, out: RopeScaling, src: RopeSource): RopeScaling {
  // transformers 5.x: an absent factor is the ratio of the two context lengths.
  const factor = raw.factor == null
    ? src.maxPositionEmbeddings / out.originalMaxPositionEmbeddings
    : positive(raw, "factor", src);
  const optional = (field: string): number | null => {
    const v = raw[field];
    if (v === undefined || v === null) return null;
    if (typeof v !== "number" || !Number.isFinite(v)) fail(src, field, "a number or null", v);
    return v;
  };
  const given = optional("attention_factor");
  const mscale = optional("mscale"), mscaleAll = optional("mscale_all_dim");
  // Python truthiness: a zero mscale counts as unset, as in transformers.
  const attentionScaling = given ??
    (mscale && mscaleAll
      ? yarnMscale(factor, mscale) / yarnMscale(factor, mscaleAll)
      : yarnMscale(factor));
  const truncate = raw.truncate ?? true;
  if (typeof truncate !== "boolean") fail(src, "truncate", "true or false", truncate);
  return {
    ...out,
    factor,
    // `or 32` / `or 1` in transformers: zero or null take the default.
    betaFast: optional("beta_fast") || 32,
    betaSlow: optional("beta_slow") || 1,
    truncate,
    attentionScaling,
  };
}
