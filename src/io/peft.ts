/**
 * LoRA adapters in PEFT's format, pure (browser-safe): which linear modules a `target_modules` /
 * `exclude_modules` pair selects (PEFT's rule: a string is a regex matched against the whole
 * module name, a list matches a name equal to an item or ending in `.item`; `all-linear` is every
 * linear layer but the output head), `adapter_config.json` in and out, and PEFT's tensor names
 * `base_model.model.<module>.lora_A.weight` [r, in] / `.lora_B.weight` [out, r].
 */
import type { ModelConfig } from "./hf_config.ts";
import { EMBED_WEIGHT, expectedTensorShapes, HEAD_WEIGHT } from "./hf_weights.ts";

/** The linear layers of a decoder layer, by their module names (one home for the list). */
export const LORA_LINEAR_MODULES = [
  "q_proj",
  "k_proj",
  "v_proj",
  "o_proj",
  "gate_proj",
  "up_proj",
  "down_proj",
] as const;

/** What a LoRA adapter is: verl's keys plus what PEFT's config adds. */
export interface LoraSettings {
  rank: number;
  alpha: number;
  /** `all-linear`, a regex over module names, or a list of module (suffix) names. */
  targetModules: string | readonly string[];
  excludeModules: string | readonly string[] | null;
  /** rsLoRA: scale alpha / sqrt(r) instead of alpha / r. */
  useRslora: boolean;
  /** lora_dropout: the drop probability of the adapter branch's input while training. */
  dropout: number;
  /** Modules trained in full and saved with the adapter (a critic's `score` head). */
  modulesToSave: readonly string[] | null;
  /** PEFT's ensure_weight_tying: saved copies of a tied embedding and lm_head stay tied. */
  ensureWeightTying: boolean;
  baseModelNameOrPath: string | null;
  taskType: "CAUSAL_LM" | "TOKEN_CLS";
}

/** The factor of B A in y = x W^T + s (x A^T) B^T. */
export function loraScale(s: Pick<LoraSettings, "rank" | "alpha" | "useRslora">): number {
  return s.useRslora ? s.alpha / Math.sqrt(s.rank) : s.alpha / s.rank;
}

/** Every linear module of the trunk with its weight shape [out, in], in model order. */
export function linearModules(config: ModelConfig): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  for (const [name, shape] of expectedTensorShapes(config)) {
    const m = /^(model\.layers\.\d+\.(?:self_attn|mlp)\.(\w+))\.weight$/.exec(name);
    if (m && (LORA_LINEAR_MODULES as readonly string[]).includes(m[2])) {
      out.set(m[1], [shape[0], shape[1]]);
    }
  }
  return out;
}

function matches(name: string, pattern: string | readonly string[]): boolean {
  if (typeof pattern === "string") return new RegExp(`^(?:${pattern})$`).test(name);
  return pattern.some((t) => name === t || name.endsWith(`.${t}`));
}

/** The module names that get adapters; an empty selection is an error naming `what`. */
export function resolveLoraTargets(
  config: ModelConfig,
  s: Pick<LoraSettings, "targetModules" | "excludeModules">,
  what = "target_modules",
): string[] {
  const all = [...linearModules(config).keys()];
  const t = s.targetModules;
  const chosen = t === "all-linear" ? all : all.filter((name) => matches(name, t));
  const exclude = s.excludeModules;
  // Modules PEFT would adapt too (a Linear head, an Embedding) but this model's adapters do not.
  for (const other of [HEAD_WEIGHT, EMBED_WEIGHT].map(moduleOf)) {
    if (t === "all-linear" || !matches(other, t)) continue;
    if (exclude !== null && matches(other, exclude)) continue;
    throw new Error(
      `${what}=${JSON.stringify(t)} selects ${other}, which PEFT would adapt; adapters here go ` +
        `on the decoder's linear layers only (${LORA_LINEAR_MODULES.join(", ")}); drop it ` +
        `from ${what}`,
    );
  }
  const kept = exclude === null ? chosen : chosen.filter((name) => !matches(name, exclude));
  if (kept.length === 0) {
    throw new Error(
      `${what}=${JSON.stringify(t)} (exclude_modules=${JSON.stringify(exclude)}) selects no ` +
        `linear module; the decoder's are ${LORA_LINEAR_MODULES.join(", ")} (or all-linear)`,
    );
  }
  return kept;
}

const PREFIX = "base_model.model.";

/** PEFT's saved name of a module's A or B matrix (no adapter name, as save_pretrained writes). */
export function peftKey(module: string, which: "A" | "B"): string {
  return `${PREFIX}${module}.lora_${which}.weight`;
}

/** PEFT's saved name of a fully trained tensor (modules_to_save), e.g. the critic's score.weight. */
export function peftSavedKey(name: string): string {
  return `${PREFIX}${name}`;
}

/** The module a tensor belongs to: its name without the last part (`.weight`, `.bias`). */
function moduleOf(name: string): string {
  return name.replace(/\.[^.]+$/, "");
}

/**
 * Whether tensor `name` (a model name such as `model.embed_tokens.weight`) belongs to one of
 * `modules` (modules_to_save), by PEFT's rule: its module's name equals an entry or ends in
 * `.entry`.
 */
export function inSavedModules(name: string, modules: readonly string[] | null): boolean {
  const module = moduleOf(name);
  return (modules ?? []).some((m) => module === m || module.endsWith(`.${m}`));
}

/** adapter_config.json as PEFT's LoraConfig writes it; `targets` is the resolved module list. */
export function adapterConfigJson(
  config: ModelConfig,
  s: LoraSettings,
  targets: readonly string[],
): object {
  // Short names when they select exactly `targets` (PEFT writes all-linear out as names too),
  // else the full module names: either loads back to the same set.
  const short = [...new Set(targets.map((t) => t.split(".").at(-1)!))];
  const bySuffix = [...linearModules(config).keys()].filter((name) => matches(name, short));
  const same = bySuffix.length === targets.length && bySuffix.every((n, i) => n === targets[i]);
  return {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: s.baseModelNameOrPath,
    bias: "none",
    ensure_weight_tying: s.ensureWeightTying,
    exclude_modules: null,
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    lora_alpha: s.alpha,
    lora_dropout: s.dropout,
    modules_to_save: s.modulesToSave,
    peft_type: "LORA",
    r: s.rank,
    rank_pattern: {},
    revision: null,
    target_modules: same ? short : [...targets],
    task_type: s.taskType,
    use_dora: false,
    use_rslora: s.useRslora,
  };
}

/** Fields of a PEFT LoraConfig that change the model in ways we do not implement. */
const REFUSED: [string, (v: unknown) => boolean, string][] = [
  ["use_dora", (v) => v === true, "DoRA is not supported"],
  ["bias", (v) => v !== undefined && v !== "none", 'only bias "none" is supported'],
  ["fan_in_fan_out", (v) => v === true, "fan_in_fan_out (Conv1D layers) is not supported"],
  ["rank_pattern", nonEmpty, "per-module ranks (rank_pattern) are not supported"],
  ["alpha_pattern", nonEmpty, "per-module alphas (alpha_pattern) are not supported"],
  ["layers_to_transform", nonEmpty, "layers_to_transform is not supported"],
  ["layer_replication", nonEmpty, "layer_replication is not supported"],
  ["target_parameters", nonEmpty, "target_parameters is not supported"],
  ["lora_bias", (v) => v === true, "LoRA biases (lora_bias) are not supported"],
  ["use_qalora", (v) => v === true, "QALoRA is not supported"],
  ["trainable_token_indices", nonEmpty, "trainable_token_indices is not supported"],
  [
    "init_lora_weights",
    (v) => typeof v === "string" && /^(pissa|olora|corda|loftq)/i.test(v),
    "this initialisation changes the base weights (peft derives them again when it loads the " +
    "folder); save the adapter converted to plain LoRA (save_pretrained with " +
    "path_initial_model_for_weight_conversion) and load that",
  ],
  [
    "init_lora_weights",
    (v) => typeof v === "string" && v.toLowerCase() === "mica",
    "MiCA (B frozen, a LoRA variant) is not supported",
  ],
];

function nonEmpty(v: unknown): boolean {
  if (v === null || v === undefined) return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v as object).length > 0;
  return true;
}

/** Parses and checks adapter_config.json; errors name `file` and the field. */
export function parseAdapterConfig(text: string, file: string): LoraSettings {
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: not JSON: ${(e as Error).message}`);
  }
  const fail = (why: string) => {
    throw new Error(`${file}: ${why}`);
  };
  if (j.peft_type !== "LORA") fail(`peft_type ${JSON.stringify(j.peft_type)} is not "LORA"`);
  for (const [key, bad, why] of REFUSED) {
    if (bad(j[key])) fail(`${key}=${JSON.stringify(j[key])}: ${why}`);
  }
  const r = j.r, alpha = j.lora_alpha ?? 8;
  if (typeof r !== "number" || !Number.isInteger(r) || r < 1) fail(`r=${JSON.stringify(r)}`);
  if (typeof alpha !== "number") fail(`lora_alpha=${JSON.stringify(alpha)}`);
  const dropout = j.lora_dropout ?? 0;
  if (typeof dropout !== "number" || !(dropout >= 0 && dropout < 1)) {
    fail(`lora_dropout=${JSON.stringify(j.lora_dropout)} is not a probability in [0, 1)`);
  }
  const names = (key: string): string | string[] | null => {
    const v = j[key];
    if (v === null || v === undefined) return null;
    if (typeof v === "string") return v;
    if (Array.isArray(v) && v.every((x) => typeof x === "string")) return v as string[];
    return fail(`${key}=${JSON.stringify(v)} is neither a string nor a list of strings`);
  };
  const target = names("target_modules");
  if (target === null) fail("target_modules is missing");
  const save = names("modules_to_save");
  return {
    rank: r as number,
    alpha: alpha as number,
    targetModules: target!,
    excludeModules: names("exclude_modules"),
    useRslora: j.use_rslora === true,
    dropout: dropout as number,
    modulesToSave: typeof save === "string" ? [save] : save,
    ensureWeightTying: j.ensure_weight_tying === true,
    baseModelNameOrPath: typeof j.base_model_name_or_path === "string"
      ? j.base_model_name_or_path
      : null,
    taskType: j.task_type === "TOKEN_CLS" ? "TOKEN_CLS" : "CAUSAL_LM",
  };
}

/** One adapter's A [r, in] and B [out, r] per module, f32. */
export type LoraArrays = Map<string, { a: Float32Array; b: Float32Array }>;

/**
 * Picks the adapter matrices of `targets` out of a PEFT state dict (keys as saved) and checks
 * their sizes; an unknown or missing key is an error naming `file`. Extra fully trained tensors
 * (modules_to_save) are returned by their model names.
 */
export function adapterFromState(
  config: ModelConfig,
  s: LoraSettings,
  state: ReadonlyMap<string, Float32Array>,
  file: string,
): { adapters: LoraArrays; saved: Map<string, Float32Array> } {
  const shapes = linearModules(config);
  const targets = resolveLoraTargets(config, s, `${file}: target_modules`);
  const adapters: LoraArrays = new Map();
  const used = new Set<string>();
  const take = (key: string, n: number) => {
    const x = state.get(key);
    if (!x) throw new Error(`${file}: missing tensor ${key}`);
    if (x.length !== n) throw new Error(`${file}: ${key} has ${x.length} values, expected ${n}`);
    used.add(key);
    return x;
  };
  for (const m of targets) {
    const [out, inF] = shapes.get(m)!;
    adapters.set(m, {
      a: take(peftKey(m, "A"), s.rank * inF),
      b: take(peftKey(m, "B"), out * s.rank),
    });
  }
  const saved = new Map<string, Float32Array>();
  for (const [key, x] of state) {
    if (used.has(key)) continue;
    const name = key.startsWith(PREFIX) ? key.slice(PREFIX.length) : key;
    if (name === EMBED_WEIGHT || name === HEAD_WEIGHT) {
      if (!inSavedModules(name, s.modulesToSave)) {
        // peft's save_embedding_layers: a targeted or resized embedding is saved whole.
        throw new Error(
          `${file}: tensor ${key} is a whole embedding or head outside modules_to_save, which ` +
            `peft saves when the vocabulary was resized or the layer targeted; neither is ` +
            `supported: merge the adapter in peft and load the merged model`,
        );
      }
    } else if (!inSavedModules(name, s.modulesToSave)) {
      throw new Error(`${file}: tensor ${key} belongs to no targeted module`);
    }
    saved.set(name, x);
  }
  return { adapters, saved };
}
