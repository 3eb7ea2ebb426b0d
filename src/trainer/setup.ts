/**
 * Deno side of the trainer: reads the config's files (model folder, tokenizer, parquet data,
 * custom reward module), resolves the resume checkpoint, and builds the parts `fit()` runs on.
 */
import { HfTokenizer, readModelFolder, tensorToFloat32 } from "../io/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { createRewardManager } from "../reward/mod.ts";
import { configToYaml, criticEnabled, type PpoConfig, ppoTrainerSchema } from "../config/mod.ts";
import { RLDataset } from "../data/mod.ts";
import { buildTrainerParts, type ModelWeights } from "./build.ts";
import { resolveResume } from "./checkpoint/manager.ts";
import { FolderCheckpointStore } from "./checkpoint/store.ts";
import type { GenerationRow, TrainerParts } from "./parts.ts";
import { createTracking } from "../tracking/mod.ts";

/** Reads a Hugging Face folder's weights as f32 arrays. */
export async function readWeights(
  path: string,
): Promise<ModelWeights & { tokenizerFiles: Record<string, string> }> {
  const folder = await readModelFolder(path);
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of folder.tensors) tensors.set(name, tensorToFloat32(t));
  return { config: folder.config, tensors, tokenizerFiles: folder.tokenizerFiles };
}

export function tokenizerFromFiles(files: Record<string, string>, where: string): HfTokenizer {
  const json = files["tokenizer.json"], cfg = files["tokenizer_config.json"];
  if (!json) throw new Error(`${where}: tokenizer.json is missing`);
  return new HfTokenizer(JSON.parse(json), cfg ? JSON.parse(cfg) : {}, { source: where });
}

function jsonlDumper(dir: string | null): ((step: number, rows: GenerationRow[]) => void) | null {
  if (!dir) return null;
  Deno.mkdirSync(dir, { recursive: true });
  return (step, rows) => {
    const text = rows.map((r) => JSON.stringify(r)).join("\n") + "\n";
    const tmp = `${dir}/.${step}.jsonl.tmp`;
    Deno.writeTextFileSync(tmp, text);
    Deno.renameSync(tmp, `${dir}/${step}.jsonl`);
  };
}

export const TINY_CHECKPOINT = new URL("../../assets/tiny_arith", import.meta.url).pathname;

export interface SetupOptions {
  print?: (line: string) => void;
}

/** Everything fit() needs, from a loaded config. */
export async function setupTrainer(
  cfg: PpoConfig,
  options: SetupOptions = {},
): Promise<TrainerParts> {
  const t = cfg.trainer;
  const resumePath = resolveResume(t.resume_mode, {
    root: t.default_local_dir,
    resumeFromPath: t.resume_from_path,
  });
  // No model path means the tiny checkpoint the embedded default starts from.
  const modelPath = cfg.actor_rollout_ref.model.path ?? TINY_CHECKPOINT;
  const base = await readWeights(modelPath);
  const actor = resumePath ? await readWeights(`${resumePath}/actor`) : base;
  const critic = resumePath && criticEnabled(cfg)
    ? await readWeights(`${resumePath}/critic`)
    : null;
  const tokenizer = tokenizerFromFiles(base.tokenizerFiles, modelPath);
  const dataOpts = {
    maxPromptLength: cfg.data.max_prompt_length,
    promptKey: cfg.data.prompt_key,
    dataSourceKey: cfg.data.reward_fn_key,
    truncation: cfg.data.truncation,
    filterOverlongPrompts: cfg.data.filter_overlong_prompts,
  };
  const train = await RLDataset.load(cfg.data.train_files, tokenizer, dataOpts);
  const val = await RLDataset.load(cfg.data.val_files, tokenizer, dataOpts);
  const print = options.print ?? console.log;
  const reward = await createRewardManager(cfg, { tokenizer, log: print });
  const tracking = createTracking(t.logger, {
    dir: "outputs",
    projectName: t.project_name,
    experimentName: t.experiment_name,
  });
  const trainDump = jsonlDumper(t.rollout_data_dir);
  const valDump = jsonlDumper(t.validation_data_dir);
  // The reference policy always starts from the original model, also when resuming.
  const parts = buildTrainerParts({
    config: cfg,
    tokenizer,
    actor,
    reference: resumePath ? base : undefined,
    critic,
    trainItems: train.items,
    valItems: val.items,
    tracking,
    reward,
    print,
    onGenerations: (kind, step, rows) => (kind === "train" ? trainDump : valDump)?.(step, rows),
    peakMemoryBytes: () => gpu().pool.peakBytes,
  });
  parts.checkpoints = new FolderCheckpointStore({
    root: t.default_local_dir,
    actor: {
      config: actor.config,
      model: parts.actor.model,
      optimizer: parts.actor.optimizer,
      tokenizerFiles: base.tokenizerFiles,
    },
    critic: parts.critic
      ? {
        config: (critic ?? actor).config,
        model: parts.critic.model,
        optimizer: parts.critic.optimizer,
      }
      : null,
    configYaml: configToYaml(cfg, ppoTrainerSchema),
    maxToKeep: t.max_actor_ckpt_to_keep,
    resumePath,
  });
  return parts;
}
