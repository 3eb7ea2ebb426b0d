/**
 * verl's LoRA keys (`lora_rank`, `lora_alpha`, `target_modules`, `exclude_modules`,
 * `lora_adapter_path`) turned into the adapters a model starts with: fresh ones (kaiming A, zero
 * B) or those of a PEFT folder (`lora_adapter_path`, or a LoRA checkpoint being resumed).
 * Browser-safe: the folder is read by the caller (src/trainer/setup.ts in Deno).
 */
import {
  type AdapterFolder,
  inSavedModules,
  type LoraArrays,
  type LoraSettings,
  type ModelConfig,
  peftKey,
} from "../io/mod.ts";
import type { TrainableModel } from "./actor.ts";
import { initLora, loraSettings } from "../nn/mod.ts";

/** The LoRA keys of a model section (actor, critic or SFT model). */
export interface LoraKeys {
  lora_rank: number;
  lora_alpha: number;
  target_modules: string | string[];
  exclude_modules: string | string[] | null;
  lora_adapter_path: string | null;
}

/** What a LoRA model is built from. */
export interface LoraStart {
  settings: LoraSettings;
  arrays: LoraArrays;
  /** Fully trained tensors saved with the adapter (a critic's score head), by model name. */
  saved: Map<string, Float32Array>;
}

/** Whether the keys ask for LoRA (a rank, or an adapter to continue from). */
export function loraEnabled(k: LoraKeys): boolean {
  return k.lora_rank > 0 || k.lora_adapter_path !== null;
}

/**
 * The adapters to start from, or null when LoRA is off. `adapter` is the folder read from
 * `lora_adapter_path` or the resumed checkpoint; its settings win, and a `lora_rank` that
 * contradicts its `r` is an error naming `section`.
 */
export function loraStart(
  keys: LoraKeys,
  o: {
    config: ModelConfig;
    section: string;
    adapter?: AdapterFolder | null;
    baseModel?: string | null;
    taskType?: LoraSettings["taskType"];
    seed?: number;
  },
): LoraStart | null {
  const adapter = o.adapter ?? null;
  if (!loraEnabled(keys) && !adapter) return null;
  if (adapter) {
    const r = adapter.settings.rank;
    if (keys.lora_rank > 0 && keys.lora_rank !== r) {
      throw new Error(
        `${o.section}.lora_rank=${keys.lora_rank} differs from the adapter's r=${r} ` +
          `(${keys.lora_adapter_path ?? "the checkpoint"}); set lora_rank to ${r} or 0`,
      );
    }
    const settings = { ...adapter.settings, taskType: o.taskType ?? adapter.settings.taskType };
    // Training a saved module in full is what a critic does with its value head (`score`); the
    // actor trains its adapters only, so another saved module could be neither trained nor kept.
    const trainsInFull = settings.taskType === "TOKEN_CLS" ? ["score"] : [];
    for (const name of adapter.saved.keys()) {
      if (inSavedModules(name, trainsInFull)) continue;
      throw new Error(
        `${o.section}.lora_adapter_path=${keys.lora_adapter_path ?? "(the checkpoint)"}: the ` +
          `adapter's modules_to_save holds ${name}, which training here cannot update in full; ` +
          `merge the adapter into its base (deno task merge) and train the merged model`,
      );
    }
    return { settings, arrays: adapter.adapters, saved: adapter.saved };
  }
  if (keys.lora_alpha <= 0) throw new Error(`${o.section}.lora_alpha must be > 0 with LoRA`);
  const settings = loraSettings({
    rank: keys.lora_rank,
    alpha: keys.lora_alpha,
    targetModules: keys.target_modules,
    excludeModules: keys.exclude_modules,
    baseModel: o.baseModel ?? null,
    taskType: o.taskType,
  });
  try {
    return { settings, arrays: initLora(o.config, settings, o.seed ?? 0), saved: new Map() };
  } catch (e) {
    throw new Error(`${o.section}.${(e as Error).message}`);
  }
}

const LORA_KEY = /^base_model\.model\.(.+)\.lora_([AB])\.weight$/;

/**
 * What a checkpoint of `model` must hold to restore it: a LoRA model's adapters under PEFT's
 * names plus its modules_to_save tensors (the frozen base is the starting model's), else every
 * parameter.
 */
export async function checkpointArrays(model: TrainableModel): Promise<Map<string, Float32Array>> {
  const lora = model.lora;
  if (!lora) return await model.toArrays();
  const out = new Map<string, Float32Array>();
  for (const [m, x] of await lora.toArrays()) {
    out.set(peftKey(m, "A"), x.a).set(peftKey(m, "B"), x.b);
  }
  const toSave = lora.settings.modulesToSave ?? [];
  if (toSave.length > 0) {
    for (const [name, x] of await model.toArrays()) {
      if (inSavedModules(name, toSave)) out.set(name, x);
    }
  }
  return out;
}

/**
 * The reverse of {@link checkpointArrays}: null when `saved` holds whole weights, else the
 * adapters (settings from `start`, the fresh adapters of the same keys) and the saved tensors.
 */
export function loraFromCheckpoint(
  saved: ReadonlyMap<string, Float32Array>,
  start: LoraStart | null,
): LoraStart | null {
  const arrays: LoraArrays = new Map();
  const rest = new Map<string, Float32Array>();
  for (const [name, x] of saved) {
    const m = LORA_KEY.exec(name);
    if (!m) {
      rest.set(name, x);
      continue;
    }
    const pair = arrays.get(m[1]) ?? { a: new Float32Array(0), b: new Float32Array(0) };
    pair[m[2] === "A" ? "a" : "b"] = x;
    arrays.set(m[1], pair);
  }
  if (arrays.size === 0) return null;
  if (!start) throw new Error("the checkpoint holds LoRA adapters but lora_rank is 0");
  return { settings: start.settings, arrays, saved: rest };
}
