/**
 * Typed reading of JSON config files with messages that name the file and the key; the readers of
 * the keys transformers 4.x and 5.x spell differently (RoPE's base and scaling, the dtype); and
 * the checks that refuse config.json features our decoder cannot honour (sliding-window
 * attention in use, mixture-of-experts, another activation, quantized weights).
 */
import type { ArchitectureSpec } from "./architectures.ts";

type Json = Record<string, unknown>;

/** Which keys a config.json spells RoPE's base and the weights' dtype with. */
export interface ConfigSpelling {
  /** `rope_theta` (+ `rope_scaling`) as 4.x writes, `rope_parameters` as 5.x writes, or both. */
  rope: "rope_theta" | "rope_parameters" | "both";
  /** `torch_dtype` (4.x), `dtype` (5.x) or both. */
  dtype: "torch_dtype" | "dtype" | "both";
}

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
export class KeyReader {
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

  /** A token id, a non-empty list of them, or null / absent (transformers' default: none). */
  tokenIds(key: string): number | number[] | null {
    const v = this.json[key] ?? null;
    if (v === null) return null;
    const ok = (x: unknown) => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
    if (ok(v)) return v as number;
    if (Array.isArray(v) && v.length > 0 && v.every(ok)) return v as number[];
    return this.fail(key, "a token id, a non-empty list of them, or null");
  }

  string(key: string, fallback: string): string {
    const v = this.json[key] ?? fallback;
    if (typeof v !== "string") this.fail(key, "a string");
    return v;
  }

  /** An object or null (absent counts as null). */
  objectOrNull(key: string): Json | null {
    const v = this.json[key] ?? null;
    if (v !== null && (typeof v !== "object" || Array.isArray(v))) {
      this.fail(key, "an object or null");
    }
    return v as Json | null;
  }
}

/** RoPE's base, scaling entries (rope_theta taken out) and spelling from either layout. */
export function readRope(json: Json, r: KeyReader, file: string) {
  const scaling = r.objectOrNull("rope_scaling");
  const params = r.objectOrNull("rope_parameters");
  if (params !== null && scaling !== null && JSON.stringify(params) !== JSON.stringify(scaling)) {
    throw new Error(
      `${file}: both "rope_scaling" and "rope_parameters" are set and differ; keep one ` +
        "(rope_parameters as transformers 5 writes it, or rope_theta + rope_scaling as 4.x does)",
    );
  }
  if (params === null) {
    const spelling: ConfigSpelling["rope"] = "rope_theta";
    return { theta: r.positiveNumber("rope_theta", 10000), scaling, spelling };
  }
  if (params.full_attention !== undefined || params.sliding_attention !== undefined) {
    throw new Error(`${file}: key "rope_parameters" holds per-layer-type entries; not supported`);
  }
  const { rope_theta: inner, ...rest } = params;
  // transformers 5 takes rope_parameters.rope_theta first, then a top-level rope_theta.
  const theta = new KeyReader({ rope_theta: inner ?? json.rope_theta }, file)
    .positiveNumber("rope_theta", 10000);
  const spelling: ConfigSpelling["rope"] = json.rope_theta === undefined
    ? "rope_parameters"
    : "both";
  return { theta, scaling: Object.keys(rest).length > 0 ? rest : null, spelling };
}

/** The weights' dtype from `torch_dtype` or `dtype`, and which of the two the file spells. */
export function readDtype(json: Json, r: KeyReader, file: string) {
  const hasOld = json.torch_dtype != null, hasNew = json.dtype != null;
  if (hasOld && hasNew && json.torch_dtype !== json.dtype) {
    throw new Error(
      `${file}: "torch_dtype" (${JSON.stringify(json.torch_dtype)}) and "dtype" ` +
        `(${JSON.stringify(json.dtype)}) disagree`,
    );
  }
  const spelling: ConfigSpelling["dtype"] = hasOld && hasNew
    ? "both"
    : hasNew
    ? "dtype"
    : "torch_dtype";
  return { dtype: r.string(hasNew ? "dtype" : "torch_dtype", "float32"), spelling };
}

function refuse(file: string, key: string, value: unknown, why: string): never {
  throw new Error(`${file}: key "${key}" is ${JSON.stringify(value)}: ${why}`);
}

/** Keys of mixture-of-experts configs (Qwen2/3-MoE, Mixtral, DeepSeek). */
const MOE_KEYS = ["num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok"];

/**
 * Throws naming the key and its value when config.json asks for something the decoder does not
 * compute: a sliding window that can bind within max_position_embeddings, experts, an activation
 * other than SiLU, quantized weights.
 */
export function refuseUnsupported(
  json: Json,
  spec: ArchitectureSpec,
  c: { file: string; numHiddenLayers: number; maxPositionEmbeddings: number },
): void {
  const { file } = c;
  for (const key of MOE_KEYS) {
    const v = json[key];
    if (v !== undefined && v !== null && v !== 0) {
      refuse(file, key, v, "mixture-of-experts models are not supported");
    }
  }
  if (json.quantization_config != null) {
    refuse(
      file,
      "quantization_config",
      json.quantization_config,
      "quantized weights are not supported",
    );
  }
  const act = json.hidden_act ?? "silu";
  if (act !== "silu") refuse(file, "hidden_act", act, "only silu (SwiGLU) is supported");
  const partial = json.partial_rotary_factor;
  if (partial !== undefined && partial !== null && partial !== 1) {
    refuse(file, "partial_rotary_factor", partial, "RoPE on part of each head is not supported");
  }
  refuseSlidingWindow(json, spec, c);
}

function refuseSlidingWindow(
  json: Json,
  spec: ArchitectureSpec,
  c: { file: string; numHiddenLayers: number; maxPositionEmbeddings: number },
): void {
  const { file } = c;
  // transformers' Mistral defaults the window to 4096 when the key is absent.
  const window = json.sliding_window === undefined && spec.slidingWindow === "always"
    ? 4096
    : json.sliding_window ?? null;
  if (window !== null && (typeof window !== "number" || !(window > 0))) {
    refuse(file, "sliding_window", window, "expected a positive integer or null");
  }
  // A window at least as long as the model's context never hides a key.
  const binds = window !== null && (window as number) < c.maxPositionEmbeddings;
  const why = `sliding-window attention (window ${window} < max_position_embeddings ` +
    `${c.maxPositionEmbeddings}) is not supported; a folder whose sequences never exceed the ` +
    "window can set sliding_window to null";
  const layerTypes = json.layer_types;
  if (layerTypes !== undefined && layerTypes !== null) {
    const ok = Array.isArray(layerTypes) && layerTypes.length === c.numHiddenLayers &&
      layerTypes.every((t) => t === "full_attention" || t === "sliding_attention");
    if (!ok) {
      refuse(
        file,
        "layer_types",
        layerTypes,
        `expected ${c.numHiddenLayers} "full_attention" entries`,
      );
    }
    if (binds && (layerTypes as string[]).includes("sliding_attention")) {
      refuse(file, "layer_types", layerTypes, why);
    }
  }
  if (!binds) return;
  if (spec.slidingWindow === "always") refuse(file, "sliding_window", window, why);
  if (spec.slidingWindow === "opt_in" && json.use_sliding_window === true) {
    // Qwen2Config and Qwen3Config default max_window_layers to 28.
    const from = json.max_window_layers ?? 28;
    if (typeof from === "number" && from < c.numHiddenLayers) {
      refuse(file, "use_sliding_window", true, `${why} (layers ${from} and up slide)`);
    }
  }
}
