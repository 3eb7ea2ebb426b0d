/**
 * `deno task merge <base> <adapter> <out>`: a PEFT LoRA folder merged into its base model,
 * W + s B A for every adapted module (computed in f32 on the CPU), written as a plain Hugging Face
 * folder in the base's own dtype (a bf16 base stays bf16; untouched tensors keep their bytes),
 * with the base's companion files (tokenizer, chat template, generation config).
 */
import {
  applySavedModules,
  fromFloat32,
  type HfTensor,
  readAdapterFolder,
  readModelFolder,
  savedModules,
  tensorToFloat32,
  writeModelFolder,
} from "../io/mod.ts";
import { mergeLoraRef } from "../nn/mod.ts";

export interface MergeSummary {
  modules: number;
  dtype: string;
}

/** Merges `adapterDir` into `baseDir` and writes `outDir` (replacing nothing: it must not exist). */
export async function mergeLoraFolder(
  baseDir: string,
  adapterDir: string,
  outDir: string,
): Promise<MergeSummary> {
  const base = await readModelFolder(baseDir);
  const adapter = await readAdapterFolder(adapterDir, base.config);
  if (adapter.settings.taskType !== "CAUSAL_LM") {
    throw new Error(
      `${adapterDir}: task_type ${adapter.settings.taskType} is a critic's adapter; merge writes ` +
        `causal LMs (task_type CAUSAL_LM)`,
    );
  }
  const names = [...adapter.adapters.keys()].map((m) => `${m}.weight`);
  const f32 = new Map(names.map((n) => [n, tensorToFloat32(base.tensors.get(n)!)]));
  const merged = mergeLoraRef(base.config, f32, adapter.adapters, adapter.settings);
  // modules_to_save tensors replace the base's, in its dtype (PEFT's merge_and_unload keeps them).
  const saved = savedModules(
    base.config,
    adapter.saved,
    adapterDir,
    adapter.settings.ensureWeightTying,
  );
  const tensors = applySavedModules(base.tensors, saved, (x, like): HfTensor => ({
    dtype: like.dtype,
    shape: like.shape,
    data: fromFloat32(x, like.dtype),
  }));
  for (const n of names) {
    const t = base.tensors.get(n)!;
    tensors.set(n, { dtype: t.dtype, shape: t.shape, data: fromFloat32(merged.get(n)!, t.dtype) });
  }
  await writeModelFolder(outDir, { config: saved.config, tensors, files: base.files });
  return { modules: names.length, dtype: base.config.torchDtype };
}
