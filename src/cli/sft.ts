/**
 * `deno task sft [config.yaml] [a.b.c=value ...]`: supervised fine-tuning with verl's SFT keys.
 * With `model.partial_pretrain=null` it starts from a fresh tiny model with the character
 * tokenizer (how the embedded default checkpoint in assets/ is made), or with the tool tokenizer
 * when `data.multiturn.enable` (how assets/tiny_calc is made).
 */
import { initGpu } from "../gpu/mod.ts";
import { charTokenizerTexts, readAdapterFolder, toolTokenizerTexts } from "../io/mod.ts";
import { tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import { CausalLM } from "../nn/mod.ts";
import { ConfigError, formatConfig, loadConfig } from "../config/mod.ts";
import { saveCheckpoint } from "../trainer/mod.ts";
import { writeModel } from "../trainer/mod.ts";
import { loraBaseDtype, loraStart, makeOptimizer } from "../trainer/mod.ts";
import { readWeights, tokenizerFromFiles } from "../trainer/mod.ts";
import { loadSftExamples } from "../data/mod.ts";
import { sftFit } from "../trainer/mod.ts";
import { createTracking } from "../tracking/mod.ts";
import { runCli, splitArgs } from "./run.ts";

/**
 * resume_mode=auto: verl's SFT would resume from the newest global_step_N under `dir`; an SFT run
 * here does not resume, so one found there is an error (none: the run starts fresh).
 */
async function refuseResume(dir: string): Promise<void> {
  const steps: number[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      const m = /^global_step_(\d+)$/.exec(e.name);
      if (e.isDirectory && m) steps.push(Number(m[1]));
    }
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  if (steps.length === 0) return;
  const last = `${dir}/global_step_${Math.max(...steps)}`;
  throw new ConfigError(
    "trainer.resume_mode",
    `trainer.resume_mode=auto found ${last}, but an SFT run does not resume: start a new run ` +
      `from it (model.partial_pretrain=${last}/huggingface, or its lora_adapter/ with ` +
      "model.lora_adapter_path), or use another trainer.default_local_dir, or resume_mode=disable",
  );
}

export async function main(args: string[]): Promise<{ step: number; valLoss: number }> {
  const cfg = loadConfig("sft_trainer", splitArgs(args));
  console.log(formatConfig(cfg));
  if (cfg.trainer.resume_mode === "auto") await refuseResume(cfg.trainer.default_local_dir);
  await initGpu();
  const start = cfg.model.partial_pretrain
    ? await readWeights(cfg.model.partial_pretrain)
    : (() => {
      // Conversations need the tool role and calls: the tool tokenizer (src/io/tool_tokenizer.ts).
      const tokenizerFiles = cfg.data.multiturn.enable
        ? toolTokenizerTexts()
        : charTokenizerTexts();
      const tok = tokenizerFromFiles(tokenizerFiles, "tiny model tokenizer");
      const config = tinyModelConfig({
        vocabSize: tok.vocabSize,
        eosTokenId: tok.eosTokenId,
        // Tool conversations (search results) run longer than the arithmetic prompts.
        ...(cfg.data.multiturn.enable ? { maxPositionEmbeddings: 512 } : {}),
      });
      const tensors = tinyWeights(config, { seed: cfg.trainer.seed });
      const files = tokenizerFiles as Record<string, string>;
      return { config, tensors, tokenizerFiles: files, files };
    })();
  const tokenizer = tokenizerFromFiles(start.tokenizerFiles, "model folder", {
    templateVariables: cfg.data.apply_chat_template_kwargs,
  });
  const d = cfg.data;
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
  const m = cfg.model;
  const adapter = m.lora_adapter_path
    ? await readAdapterFolder(m.lora_adapter_path, start.config)
    : null;
  const lora = loraStart(m, {
    config: start.config,
    section: "model",
    adapter,
    baseModel: m.partial_pretrain,
    seed: cfg.trainer.seed,
  });
  const model = CausalLM.fromTensors(start.config, start.tensors, {
    lora: lora ?? undefined,
    dtype: loraBaseDtype(lora),
  });
  model.gradientCheckpointing = cfg.model.enable_gradient_checkpointing;
  // With LoRA only the adapters train (the base has no gradients and no AdamW state).
  const optimizer = makeOptimizer(model.trainable(), {
    lr: cfg.optim.lr,
    betas: cfg.optim.betas,
    weight_decay: cfg.optim.weight_decay,
  });
  const t = cfg.trainer;
  // A LoRA run saves the adapter as a PEFT folder (verl's lora_adapter/), else the whole model.
  const saved = lora ? "lora_adapter" : "huggingface";
  const perEpoch = Math.floor(train.length / d.train_batch_size);
  const tracking = createTracking(t.logger, {
    dir: "outputs",
    projectName: t.project_name,
    experimentName: t.experiment_name,
  });
  const res = await sftFit({
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
    testFreq: t.test_freq,
    tracking,
    saveFreq: t.save_freq,
    save: (step) =>
      saveCheckpoint(t.default_local_dir, step, async (dir) => {
        await writeModel(`${dir}/${saved}`, {
          config: start.config,
          model,
          files: start.files,
        });
      }, { maxToKeep: t.max_ckpt_to_keep }).then(() => {}),
  });
  tracking.close();
  console.log(`done: ${res.step} steps, val/loss ${res.valLoss.toFixed(4)}`);
  console.log(`model: ${t.default_local_dir}/global_step_${res.step}/${saved}`);
  return res;
}

if (import.meta.main) {
  await runCli("sft", () => main(Deno.args), {
    usage:
      "usage: deno task sft [config.yaml ...] [key=value ...] (keys: configs/sft_trainer.yaml)",
  });
}
