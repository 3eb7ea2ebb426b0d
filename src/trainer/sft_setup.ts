/**
 * Deno side of an SFT run (`deno task sft`): takes the checkpoint folder as the PPO trainer does
 * (lock, leftovers of interrupted runs, the checkpoint `trainer.resume_mode` picks, its checksums,
 * extra state and saved config checked), reads the model, the tokenizer and the examples, and
 * returns what sftFit runs on. The model is the resumed checkpoint's `huggingface/` folder, else
 * `model.partial_pretrain`, else a fresh tiny model; under LoRA the base is always the starting
 * model and the adapters come from the checkpoint's `lora_adapter/` (or `lora_adapter_path`).
 */
import {
  type AdapterFolder,
  charTokenizerTexts,
  type ModelConfig,
  readAdapterFolder,
  toolTokenizerTexts,
} from "../io/mod.ts";
import { CausalLM, tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import { configToYaml, loadConfig, type SftConfig, sftTrainerSchema } from "../config/mod.ts";
import { loadSftExamples } from "../data/mod.ts";
import { createTracking, runDirOf } from "../tracking/mod.ts";
import { loraBaseDtype, makeOptimizer } from "./build.ts";
import { exists } from "./checkpoint/durable.ts";
import { CheckpointError } from "./checkpoint/manager.ts";
import { openCheckpoints, type ResumePoint } from "./checkpoint/open.ts";
import { checkWritableDirs } from "./checkpoint/preflight.ts";
import { FolderCheckpointStore } from "./checkpoint/store.ts";
import { loraEnabled, loraStart } from "./lora.ts";
import { readWeights, tokenizerFromFiles } from "./setup.ts";
import type { SftFitOptions } from "./sft_trainer.ts";

/** What an SFT run trains from: weights, and the files every save carries. */
interface StartWeights {
  config: ModelConfig;
  tensors: Map<string, Float32Array>;
  tokenizerFiles: Record<string, string>;
  files: Record<string, string>;
}

export interface SftRun {
  fit: SftFitOptions;
  /** The checkpoint's model folder: `huggingface` or, under LoRA, `lora_adapter` (verl's names). */
  part: string;
  /** The step the run resumes after (0: a fresh run). */
  resumeStep: number;
}

/** A fresh tiny model with the character tokenizer (or the tool tokenizer for conversations). */
function freshTiny(cfg: SftConfig): StartWeights {
  const multiturn = cfg.data.multiturn.enable;
  const files = (multiturn ? toolTokenizerTexts() : charTokenizerTexts()) as Record<string, string>;
  const tok = tokenizerFromFiles(files, "tiny model tokenizer");
  const config = tinyModelConfig({
    vocabSize: tok.vocabSize,
    eosTokenId: tok.eosTokenId,
    // Tool conversations (search results) run longer than the arithmetic prompts.
    ...(multiturn ? { maxPositionEmbeddings: 512 } : {}),
  });
  const tensors = tinyWeights(config, { seed: cfg.trainer.seed });
  return { config, tensors, tokenizerFiles: files, files };
}

/** `{checkpoint}/{part}`, which must exist: else the checkpoint is not this kind of run's. */
function partOf(resume: ResumePoint, part: string): string {
  const dir = `${resume.path}/${part}`;
  if (exists(dir)) return dir;
  const held = [...Deno.readDirSync(resume.path)].filter((e) => e.isDirectory).map((e) => e.name);
  throw new CheckpointError(
    `cannot resume from ${resume.path}: it holds no ${part}/ folder, which an SFT run ` +
      `${part === "lora_adapter" ? "with" : "without"} LoRA saves (it holds ` +
      `${held.length ? held.map((n) => `${n}/`).join(", ") : "no folder"}). Resume it with the ` +
      "run's own model.lora_rank, or start fresh with trainer.resume_mode=disable or another " +
      "trainer.default_local_dir",
  );
}

/** Everything sftFit needs, from a loaded config (the GPU initialised). */
/** save_freq / test_freq in steps: verl's after_each_epoch is the steps of one epoch. */
export function stepsOf(freq: number | "after_each_epoch", perEpoch: number): number {
  return freq === "after_each_epoch" ? perEpoch : freq;
}

export async function setupSft(
  cfg: SftConfig,
  options: { print?: (line: string) => void } = {},
): Promise<SftRun> {
  const print = options.print ?? console.log;
  const t = cfg.trainer, d = cfg.data, m = cfg.model;
  const where = {
    dir: "outputs",
    projectName: t.project_name,
    experimentName: t.experiment_name,
  };
  checkWritableDirs([[
    "trainer.project_name/experiment_name (the metrics folder of trainer.logger)",
    t.logger.some((l) => l !== "console") ? runDirOf(where) : null,
  ]]);
  const configYaml = configToYaml(cfg, sftTrainerSchema);
  // verl's SFT trainer: auto with resume_from_path set resumes from that path.
  const mode = t.resume_mode === "auto" && t.resume_from_path ? "resume_path" : t.resume_mode;
  // SFT saves at the end of every run, so it always takes the folder's lock.
  const resume = await openCheckpoints({
    root: t.default_local_dir,
    mode,
    resumeFromPath: t.resume_from_path,
    saving: true,
    configYaml,
    defaultsYaml: configToYaml(
      loadConfig(sftTrainerSchema, { skipPathChecks: true }),
      sftTrainerSchema,
    ),
    allowedChanges: t.resume_allowed_changes,
    print,
  });
  const lora = loraEnabled(m);
  const part = lora ? "lora_adapter" : "huggingface";
  const resumed = resume && partOf(resume, part);
  const start = resumed && !lora
    ? await readWeights(resumed)
    : m.partial_pretrain
    ? await readWeights(m.partial_pretrain)
    : freshTiny(cfg);
  const tokenizer = tokenizerFromFiles(start.tokenizerFiles, "model folder", {
    templateVariables: d.apply_chat_template_kwargs,
  });
  const dataOpts = {
    promptKey: d.prompt_key,
    responseKey: d.response_key,
    promptDictKeys: d.prompt_dict_keys ?? [],
    responseDictKeys: d.response_dict_keys ?? [],
    maxLength: d.max_length,
    truncation: d.truncation,
    multiturn: d.multiturn.enable
      ? {
        messagesKey: d.multiturn.messages_key,
        toolsKey: d.multiturn.tools_key,
        enableThinkingKey: d.multiturn.enable_thinking_key,
      }
      : undefined,
  };
  const pick = (max: number) => ({ max, shuffle: d.shuffle, seed: d.seed });
  const train = await loadSftExamples(d.train_files, tokenizer, {
    ...dataOpts,
    maxSamples: pick(d.train_max_samples),
  });
  const val = await loadSftExamples(d.val_files, tokenizer, {
    ...dataOpts,
    maxSamples: pick(d.val_max_samples),
  });
  // A resumed LoRA run continues the checkpoint's adapters on the starting base.
  const adapterDir = lora ? resumed || m.lora_adapter_path : null;
  const adapter: AdapterFolder | null = adapterDir
    ? await readAdapterFolder(adapterDir, start.config)
    : null;
  const loraInit = loraStart(m, {
    config: start.config,
    section: "model",
    adapter,
    baseModel: m.partial_pretrain,
    seed: t.seed,
  });
  const model = CausalLM.fromTensors(start.config, start.tensors, {
    lora: loraInit ?? undefined,
    dtype: loraBaseDtype(loraInit),
  });
  model.gradientCheckpointing = m.enable_gradient_checkpointing;
  // With LoRA only the adapters train (the base has no gradients and no AdamW state).
  const optimizer = makeOptimizer(model.trainable(), {
    lr: cfg.optim.lr,
    betas: cfg.optim.betas,
    weight_decay: cfg.optim.weight_decay,
  });
  // Metric files are cut back to the resumed step (a fresh run moves an earlier run's aside).
  const tracking = createTracking(t.logger, { ...where, resumeStep: resume?.step ?? -1, print });
  const checkpoints = new FolderCheckpointStore({
    root: t.default_local_dir,
    parts: { [part]: { config: start.config, model, optimizer, files: start.files } },
    configYaml,
    maxToKeep: t.max_ckpt_to_keep,
    resume,
  });
  const perEpoch = Math.floor(train.length / d.train_batch_size);
  return {
    part,
    resumeStep: resume?.step ?? 0,
    fit: {
      model,
      optimizer,
      train,
      val,
      batchSize: d.train_batch_size,
      microBatchSize: d.micro_batch_size_per_gpu,
      removePadding: cfg.use_remove_padding,
      totalSteps: t.total_training_steps ?? perEpoch * t.total_epochs,
      lr: cfg.optim.lr,
      warmupStepsRatio: cfg.optim.warmup_steps_ratio,
      scheduler: cfg.optim.lr_scheduler,
      clipGrad: cfg.optim.clip_grad,
      seed: t.seed,
      shuffle: d.shuffle,
      testFreq: stepsOf(t.test_freq, perEpoch),
      tracking,
      checkpoints,
      saveFreq: stepsOf(t.save_freq, perEpoch),
      print,
    },
  };
}
