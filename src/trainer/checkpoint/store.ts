/**
 * Checkpoints on disk: each model of a run is a part of `global_step_N/` (PPO's `actor/` and
 * `critic/`, SFT's `huggingface/` or `lora_adapter/`), a Hugging Face folder that `transformers`
 * loads as it is, in the dtype the model came in (a bf16 model is saved bf16), with its tokenizer
 * files and generation_config.json, or under LoRA a PEFT adapter folder; the part's
 * `optimizer.safetensors` holds AdamW's moments and step, and, when the folder's dtype is not f32,
 * the f32 master weights, so a resume continues from the exact weights;
 * `global_step_N/extra_state.json` holds the step, the loader position, the KL controller and the
 * resolved config.
 */
import { gpu } from "../../gpu/mod.ts";
import {
  EMBED_WEIGHT,
  floatTensor,
  HEAD_WEIGHT,
  inSavedModules,
  type ModelConfig,
  readSafetensorsFile,
  tensorToFloat32,
  type TorchFloatDtype,
  writeAdapterFolder,
  writeModelFolder,
  writeSafetensorsFile,
} from "../../io/mod.ts";
import type { TrainableModel } from "../actor.ts";
import type { CheckpointStore } from "../parts.ts";
import type { Optimizer } from "../optimizer_step.ts";
import { describe, firstNonFinite, NonFiniteError } from "./finite.ts";
import { saveCheckpoint } from "./manager.ts";
import type { ResumePoint } from "./open.ts";

export interface SavedModel {
  config: ModelConfig;
  model: TrainableModel;
  optimizer: Optimizer;
  /**
   * Files written into the folder verbatim: tokenizer.json, tokenizer_config.json,
   * chat_template.jinja, generation_config.json (as read from the model folder).
   */
  files?: Record<string, string>;
}

const WRITABLE: readonly string[] = ["float32", "float16", "bfloat16"];

/**
 * The dtype a model's folder is saved in: the one its config.json names (`torch_dtype` or
 * `dtype`), rounded to nearest even from the f32 parameters; f32 for any other name.
 */
export function saveDtype(config: ModelConfig): TorchFloatDtype {
  return WRITABLE.includes(config.torchDtype) ? config.torchDtype as TorchFloatDtype : "float32";
}

/** Throws naming `what` and the first non-finite tensor, if any. */
function assertFinite(what: string, arrays: Iterable<[string, Float32Array]>): void {
  const bad = firstNonFinite(arrays);
  if (bad) {
    throw new NonFiniteError(`${what}: ${describe(bad)}; refusing to save non-finite state`);
  }
}

const partName = (dir: string) => dir.replace(/\/+$/, "").split("/").at(-1);

/**
 * A LoRA model's adapter as a PEFT folder (adapter_config.json, adapter_model.safetensors in
 * f32, the companion files), with the fully trained tensors PEFT's modules_to_save names.
 */
async function writeAdapter(dir: string, m: Omit<SavedModel, "optimizer">): Promise<void> {
  const lora = m.model.lora!;
  const adapters = await lora.toArrays();
  const flat = [...adapters].flatMap(([k, x]): [string, Float32Array][] => [
    [`${k}.lora_A`, x.a],
    [`${k}.lora_B`, x.b],
  ]);
  const saved = new Map<string, { shape: number[]; data: Float32Array }>();
  const toSave = lora.settings.modulesToSave;
  if (toSave?.length) {
    const params = m.model.params();
    const arrays = await m.model.toArrays();
    const shapes = new Map([...params].map(([name, t]) => [name, [...t.shape]]));
    // A tied lm_head is the embedding: a saved one is written under its own name, as PEFT does.
    if (m.config.tieWordEmbeddings && arrays.has(EMBED_WEIGHT)) {
      arrays.set(HEAD_WEIGHT, arrays.get(EMBED_WEIGHT)!);
      shapes.set(HEAD_WEIGHT, shapes.get(EMBED_WEIGHT)!);
    }
    for (const [name, data] of arrays) {
      if (inSavedModules(name, toSave)) saved.set(name, { shape: shapes.get(name)!, data });
    }
  }
  assertFinite(`${partName(dir)} adapter`, [
    ...flat,
    ...[...saved].map(([k, t]): [string, Float32Array] => [k, t.data]),
  ]);
  await writeAdapterFolder(dir, {
    config: m.config,
    settings: lora.settings,
    adapters,
    shapes: lora.shapes(),
    saved,
    files: m.files,
  });
}

/**
 * Writes a model's parameters as a Hugging Face folder (temp name, then rename), or a LoRA
 * model's adapter as a PEFT folder; refuses parameters holding NaN or ±Infinity, naming the
 * folder's part (`actor`) and the tensor.
 */
export async function writeModel(dir: string, m: Omit<SavedModel, "optimizer">): Promise<void> {
  if (m.model.lora) return await writeAdapter(dir, m);
  const params = m.model.params();
  const arrays = await m.model.toArrays();
  assertFinite(`${partName(dir)} weights`, arrays);
  const tensors = new Map(
    [...arrays].map(([name, data]) => [name, floatTensor([...params.get(name)!.shape], data)]),
  );
  await writeModelFolder(dir, {
    config: m.config,
    tensors,
    dtype: saveDtype(m.config),
    files: m.files,
    overwrite: true,
  });
}

/** AdamW's state, and the f32 master weights `w.i` when the folder holds them rounded. */
async function writeOptimizer(path: string, part: SavedModel, name: string): Promise<void> {
  const opt = part.optimizer;
  const state = await opt.adamw.state();
  assertFinite(`${name} optimizer state`, [
    ...state.m.map((m, i): [string, Float32Array] => [`m.${i}`, m]),
    ...state.v.map((v, i): [string, Float32Array] => [`v.${i}`, v]),
  ]);
  const raw = (name: string, x: Float32Array) => {
    const t = floatTensor([x.length], x);
    return { name, dtype: t.dtype, shape: t.shape, bytes: t.data };
  };
  // Adapters are saved in f32: no master copies needed.
  const master = saveDtype(part.config) === "float32" || part.model.lora
    ? []
    : await gpu().read(opt.params.map((p) => ({ buffer: p.buffer, size: p.byteSize })));
  const tensors = [
    ...state.m.map((m, i) => raw(`m.${i}`, m)),
    ...state.v.map((v, i) => raw(`v.${i}`, v)),
    ...master.map((w, i) => raw(`w.${i}`, new Float32Array(w))),
  ];
  // Mixed precision: the loss scaler's state (GradScaler's state_dict) rides in the metadata.
  const scaler = opt.scaler?.state();
  const metadata: Record<string, string> = { step: String(state.step) };
  if (scaler) {
    metadata.loss_scale = String(scaler.scale);
    metadata.loss_scale_good_steps = String(scaler.goodSteps);
  }
  await writeSafetensorsFile(path, tensors, { metadata });
}

async function readOptimizer(path: string, opt: Optimizer): Promise<void> {
  const file = await readSafetensorsFile(path);
  const n = opt.params.length;
  const byName = new Map(file.tensors.map((t) => [t.name, t]));
  const get = (name: string) => {
    const t = byName.get(name);
    if (!t) throw new Error(`${path}: optimizer state lacks tensor ${name}`);
    const x = tensorToFloat32({ dtype: t.dtype, shape: t.shape, data: t.bytes });
    const bad = firstNonFinite([[name, x]]);
    if (bad) throw new NonFiniteError(`${path}: ${describe(bad)}; refusing to load it`);
    return x;
  };
  const step = Number(file.metadata?.step ?? NaN);
  if (!Number.isInteger(step)) throw new Error(`${path}: metadata "step" is missing`);
  opt.adamw.loadState({
    step,
    m: Array.from({ length: n }, (_, i) => get(`m.${i}`)),
    v: Array.from({ length: n }, (_, i) => get(`v.${i}`)),
  });
  const scale = file.metadata?.loss_scale;
  if (opt.scaler && scale !== undefined) {
    opt.scaler.loadState({
      scale: Number(scale),
      goodSteps: Number(file.metadata?.loss_scale_good_steps ?? 0),
    });
  }
  // The folder's weights were rounded to its dtype; the master copies continue exactly.
  if (!byName.has("w.0")) return;
  opt.params.forEach((p, i) => {
    const w = get(`w.${i}`);
    if (w.length !== p.size || p.dtype !== "f32") {
      throw new Error(`${path}: master weight w.${i} has ${w.length} values, the model ${p.size}`);
    }
    p.write(w); // bumps the version the f16 copies are keyed on
  });
}

export interface FolderStoreOptions {
  root: string;
  /**
   * The models a checkpoint holds, by sub-folder: `actor` and `critic` (PPO), `huggingface` or
   * `lora_adapter` (SFT); a null part is left out.
   */
  parts: Record<string, SavedModel | null>;
  configYaml: string;
  /** Keep only the newest N checkpoints (SFT's max_ckpt_to_keep); null keeps all. */
  maxToKeep?: number | null;
  /** Keep a part only in its newest N checkpoints (max_actor_ckpt_to_keep, ...). */
  partsToKeep?: Record<string, number | null>;
  /** The checkpoint chosen by resume_mode, already checked (null: start fresh). */
  resume: ResumePoint | null;
}

export class FolderCheckpointStore implements CheckpointStore {
  constructor(readonly o: FolderStoreOptions) {}

  #parts(): [string, SavedModel][] {
    return Object.entries(this.o.parts).filter((e): e is [string, SavedModel] => e[1] !== null);
  }

  async save(step: number, extra: Record<string, unknown>): Promise<void> {
    await saveCheckpoint(this.o.root, step, async (dir) => {
      for (const [name, part] of this.#parts()) {
        await writeModel(`${dir}/${name}`, part);
        await writeOptimizer(`${dir}/${name}/optimizer.safetensors`, part, name);
      }
      await Deno.writeTextFile(
        `${dir}/extra_state.json`,
        JSON.stringify({ ...extra, config: this.o.configYaml }, null, 1),
      );
    }, { maxToKeep: this.o.maxToKeep, partsToKeep: this.o.partsToKeep });
  }

  /** Optimizer states and extra of the resume checkpoint (the weights were loaded at setup). */
  async resume(): Promise<Record<string, unknown> | null> {
    const r = this.o.resume;
    if (!r) return null;
    for (const [name, part] of this.#parts()) {
      await readOptimizer(`${r.path}/${name}/optimizer.safetensors`, part.optimizer);
    }
    return { ...r.extra };
  }
}
