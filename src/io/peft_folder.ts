/**
 * PEFT adapter folders on disk (Deno): `adapter_config.json` + `adapter_model.safetensors`, read
 * (as `peft` writes them, any float dtype) and written (f32, temp folder then rename), with files
 * such as the tokenizer's copied along.
 */
import { toFloat32 } from "./dtype.ts";
import type { ModelConfig } from "./hf_config.ts";
import { adapterConfigJson, adapterFromState, type LoraArrays, type LoraSettings } from "./peft.ts";
import { parseAdapterConfig, peftKey, peftSavedKey } from "./peft.ts";
import type { RawTensor } from "./safetensors.ts";
import { joinPath, readSafetensorsFile, writeSafetensorsFile } from "./safetensors_fs.ts";
import { fromFloat32, isFloatDtype } from "./dtype.ts";

export const ADAPTER_CONFIG_FILE = "adapter_config.json";
export const ADAPTER_WEIGHTS_FILE = "adapter_model.safetensors";

/** Whether `dir` holds a PEFT adapter (its adapter_config.json). */
export async function isAdapterFolder(dir: string): Promise<boolean> {
  try {
    return (await Deno.stat(joinPath(dir, ADAPTER_CONFIG_FILE))).isFile;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

export interface AdapterFolder {
  settings: LoraSettings;
  adapters: LoraArrays;
  /** modules_to_save tensors by model name (e.g. `score.weight`). */
  saved: Map<string, Float32Array>;
}

/** Where verl's trainer saves an actor's adapter inside its checkpoint folder. */
export const VERL_ADAPTER_SUBFOLDER = "lora_adapter";

/**
 * Reads a PEFT LoRA folder for `config`'s model; errors name the file and tensor. A verl actor
 * checkpoint folder (`global_step_N/actor`, whose adapter is in `lora_adapter/`) reads that.
 */
export async function readAdapterFolder(dir: string, config: ModelConfig): Promise<AdapterFolder> {
  if (!(await isAdapterFolder(dir))) {
    const inner = joinPath(dir, VERL_ADAPTER_SUBFOLDER);
    if (!(await isAdapterFolder(inner))) {
      throw new Error(
        `LoRA adapter: missing ${joinPath(dir, ADAPTER_CONFIG_FILE)} ` +
          `(nor ${joinPath(inner, ADAPTER_CONFIG_FILE)}, as in a verl actor checkpoint)`,
      );
    }
    dir = inner;
  }
  const cfgPath = joinPath(dir, ADAPTER_CONFIG_FILE);
  const text = await Deno.readTextFile(cfgPath);
  const settings = parseAdapterConfig(text, cfgPath);
  const file = joinPath(dir, ADAPTER_WEIGHTS_FILE);
  const state = new Map<string, Float32Array>();
  for (const t of (await readSafetensorsFile(file)).tensors) {
    if (!isFloatDtype(t.dtype)) throw new Error(`${file}: tensor ${t.name} is ${t.dtype}`);
    state.set(t.name, toFloat32(t.bytes, t.dtype));
  }
  return { settings, ...adapterFromState(config, settings, state, file) };
}

export interface WriteAdapterOptions {
  config: ModelConfig;
  settings: LoraSettings;
  adapters: LoraArrays;
  /** Weight shapes [out, in] of the adapted modules (A is [r, in], B [out, r]). */
  shapes: ReadonlyMap<string, readonly [number, number]>;
  saved?: ReadonlyMap<string, { shape: number[]; data: Float32Array }>;
  /** Files written verbatim (tokenizer files, so the folder is self-contained). */
  files?: Readonly<Record<string, string>>;
}

/** Writes a PEFT folder at `dir` (replacing one there): f32 tensors, sorted keys. */
export async function writeAdapterFolder(dir: string, o: WriteAdapterOptions): Promise<void> {
  const r = o.settings.rank;
  const raw = (name: string, shape: number[], data: Float32Array): RawTensor => ({
    name,
    dtype: "F32",
    shape,
    bytes: fromFloat32(data, "F32"),
  });
  const tensors: RawTensor[] = [];
  for (const [m, { a, b }] of o.adapters) {
    const [out, inF] = o.shapes.get(m)!;
    tensors.push(raw(peftKey(m, "A"), [r, inF], a), raw(peftKey(m, "B"), [out, r], b));
  }
  for (const [name, t] of o.saved ?? []) tensors.push(raw(peftSavedKey(name), t.shape, t.data));
  const parent = dir.replace(/\/+$/, "").split("/").slice(0, -1).join("/") || ".";
  await Deno.mkdir(parent, { recursive: true });
  const tmp = `${dir.replace(/\/+$/, "")}.tmp-${Date.now().toString(36)}`;
  await Deno.mkdir(tmp, { recursive: true });
  try {
    const json = adapterConfigJson(o.config, o.settings, [...o.adapters.keys()]);
    await Deno.writeTextFile(joinPath(tmp, ADAPTER_CONFIG_FILE), JSON.stringify(json, null, 2));
    await writeSafetensorsFile(joinPath(tmp, ADAPTER_WEIGHTS_FILE), tensors, {
      metadata: { format: "pt" },
    });
    for (const [name, text] of Object.entries(o.files ?? {})) {
      await Deno.writeTextFile(joinPath(tmp, name), text);
    }
    await Deno.remove(dir, { recursive: true }).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
    await Deno.rename(tmp, dir);
  } catch (e) {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    throw e;
  }
}
