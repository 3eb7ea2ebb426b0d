/**
 * Deno side of the trainer: reads the config's files (model folder, tokenizer, parquet data,
 * custom reward module), resolves the resume checkpoint, and builds the parts `fit()` runs on.
 */
import {
  type AdapterFolder,
  type GenerationConfig,
  type HfTokenizer,
  isAdapterFolder,
  type ModelConfig,
  readAdapterFolder,
  readCompanionFiles,
  readModelFolder,
  stopTokenIds,
  tensorToFloat32,
  TOKENIZER_FILE_NAMES,
  tokenizerFromFiles as tokenizerOfFiles,
} from "../io/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { createRewardManager } from "../reward/mod.ts";
import { checkAgentUsed, checkInteractionRows, closeAgentEnv, loadAgentEnv } from "./agent.ts";
import {
  checkContextLength,
  configToYaml,
  criticEnabled,
  dataSeed,
  type PpoConfig,
  ppoTrainerSchema,
} from "../config/mod.ts";
import { RLDataset } from "../data/mod.ts";
import { buildTrainerParts, type ModelWeights } from "./build.ts";
import { checkFiniteWeights } from "./checkpoint/finite.ts";
import { openCheckpoints } from "./checkpoint/open.ts";
import { attachRemote } from "./remote_setup.ts";
import { checkWritableDirs } from "./checkpoint/preflight.ts";
import { FolderCheckpointStore } from "./checkpoint/store.ts";
import type { GenerationRow, TrainerParts } from "./parts.ts";
import { createTracking, runDirOf } from "../tracking/mod.ts";
import { type LoraKeys, loraStart } from "./lora.ts";

/** What a model folder holds for training: f32 weights and the files that travel with them. */
export interface FolderWeights extends ModelWeights {
  tokenizerFiles: Record<string, string>;
  /** Tokenizer files and generation_config.json as read, written into every save. */
  files: Record<string, string>;
  generationConfig: GenerationConfig | null;
}

/** Reads a Hugging Face folder's weights as f32 arrays; NaN or ±Infinity is an error. */
export async function readWeights(path: string): Promise<FolderWeights> {
  const folder = await readModelFolder(path);
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of folder.tensors) tensors.set(name, tensorToFloat32(t));
  checkFiniteWeights(path, tensors);
  return {
    config: folder.config,
    tensors,
    tokenizerFiles: folder.tokenizerFiles,
    files: folder.files,
    generationConfig: folder.generationConfig,
  };
}

/** The tokenizer of a folder's files (chat_template.jinja honoured); `where` names the folder. */
export function tokenizerFromFiles(
  files: Record<string, string>,
  where: string,
  options: { templateVariables?: Record<string, unknown> } = {},
): HfTokenizer {
  return tokenizerOfFiles(files, { source: where, templateVariables: options.templateVariables });
}

/** Where a run's tokenizer comes from (verl's keys). */
export interface TokenizerChoice {
  /** `data.tokenizer`: a folder whose tokenizer files replace the model folder's. */
  tokenizerDir: string | null;
  /** `actor_rollout_ref.model.custom_chat_template`. */
  customTemplate: string | null;
  /** `data.apply_chat_template_kwargs`. */
  templateVariables: Record<string, unknown>;
}

/**
 * The run's tokenizer and the files each save carries: the tokenizer files of `data.tokenizer`
 * (else the model folder's), the model's generation_config.json, and `custom_chat_template`
 * (used instead of the tokenizer's, and saved as chat_template.jinja, which transformers reads
 * before the config's template).
 */
export async function resolveTokenizer(
  model: { path: string; files: Record<string, string> },
  choice: TokenizerChoice,
): Promise<{ tokenizer: HfTokenizer; files: Record<string, string> }> {
  const dir = choice.tokenizerDir;
  const tokFiles = dir ? await readCompanionFiles(dir) : model.files;
  const isTokenizerFile = (name: string) =>
    (TOKENIZER_FILE_NAMES as readonly string[]).includes(name);
  const files: Record<string, string> = {};
  for (const [name, text] of Object.entries(model.files)) {
    if (!isTokenizerFile(name)) files[name] = text;
  }
  for (const [name, text] of Object.entries(tokFiles)) {
    if (isTokenizerFile(name)) files[name] = text;
  }
  const custom = choice.customTemplate;
  if (custom !== null) files["chat_template.jinja"] = custom;
  const tokenizer = tokenizerOfFiles(tokFiles, {
    source: dir ?? model.path,
    templateVariables: choice.templateVariables,
    ...(custom === null ? {} : { chatTemplate: custom }),
  });
  return { tokenizer, files };
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
/** Where the metric loggers write: `outputs/{project_name}/{experiment_name}`. */
export function runFolder(cfg: PpoConfig) {
  const t = cfg.trainer;
  return { dir: "outputs", projectName: t.project_name, experimentName: t.experiment_name };
}

/**
 * The PEFT folder a LoRA model starts from: the resumed checkpoint's part when it holds an
 * adapter, else `lora_adapter_path`, else none (fresh adapters).
 */
async function adapterToLoad(
  keys: LoraKeys,
  resumePart: string | null,
  config: ModelConfig,
): Promise<AdapterFolder | null> {
  if (resumePart && (await isAdapterFolder(resumePart))) {
    return await readAdapterFolder(resumePart, config);
  }
  return keys.lora_adapter_path ? await readAdapterFolder(keys.lora_adapter_path, config) : null;
}

export async function setupTrainer(
  cfg: PpoConfig,
  options: SetupOptions = {},
): Promise<TrainerParts> {
  const t = cfg.trainer;
  const print = options.print ?? console.log;
  const where = runFolder(cfg);
  const runDir = runDirOf(where);
  checkWritableDirs([
    [
      "trainer.project_name/experiment_name (the metrics folder of trainer.logger)",
      t.logger.some((l) => l !== "console") ? runDir : null,
    ],
    ["trainer.rollout_data_dir", t.rollout_data_dir],
    ["trainer.validation_data_dir", t.validation_data_dir],
  ]);
  const configYaml = configToYaml(cfg, ppoTrainerSchema);
  // Lock, clean, pick and check the resume checkpoint before reading anything else.
  const resume = await openCheckpoints({
    root: t.default_local_dir,
    mode: t.resume_mode,
    resumeFromPath: t.resume_from_path,
    saving: t.save_freq > 0,
    configYaml,
    allowedChanges: t.resume_allowed_changes,
    print,
  });
  const resumePath = resume?.path ?? null;
  // No model path means the tiny checkpoint the embedded default starts from.
  const modelPath = cfg.actor_rollout_ref.model.path ?? TINY_CHECKPOINT;
  const base = await readWeights(modelPath);
  const m = cfg.actor_rollout_ref.model;
  // A LoRA checkpoint holds the adapter (a PEFT folder); the base comes from model.path.
  const actorAdapter = await adapterToLoad(m, resumePath && `${resumePath}/actor`, base.config);
  const actor = resumePath && !actorAdapter ? await readWeights(`${resumePath}/actor`) : base;
  const actorLora = loraStart(m, {
    config: base.config,
    section: "actor_rollout_ref.model",
    adapter: actorAdapter,
    baseModel: m.path,
    seed: t.seed,
  });
  // critic.model.path defaults to the actor's; another folder starts the critic from its trunk.
  const criticPath = cfg.critic.model.path ?? TINY_CHECKPOINT;
  const cm = cfg.critic.model;
  const criticBase = criticEnabled(cfg) && criticPath !== modelPath
    ? await readWeights(criticPath)
    : null;
  const criticAdapter = criticEnabled(cfg)
    ? await adapterToLoad(cm, resumePath && `${resumePath}/critic`, (criticBase ?? base).config)
    : null;
  const criticLora = !criticEnabled(cfg) ? null : loraStart(cm, {
    config: (criticBase ?? base).config,
    section: "critic.model",
    adapter: criticAdapter,
    baseModel: cm.path,
    taskType: "TOKEN_CLS",
    seed: t.seed + 1,
  });
  const critic = !criticEnabled(cfg)
    ? null
    : resumePath && !criticAdapter
    ? await readWeights(`${resumePath}/critic`)
    : criticBase ?? (criticLora ? base : null);

  // verl's rollout refuses the same: positions past the model's window were never trained.
  checkContextLength({
    maxPromptLength: cfg.data.max_prompt_length,
    maxResponseLength: cfg.data.max_response_length,
    maxPositionEmbeddings: base.config.maxPositionEmbeddings,
    model: `${modelPath}/config.json`,
  });
  const { tokenizer, files } = await resolveTokenizer({ path: modelPath, files: base.files }, {
    tokenizerDir: cfg.data.tokenizer,
    customTemplate: cfg.actor_rollout_ref.model.custom_chat_template,
    templateVariables: cfg.data.apply_chat_template_kwargs,
  });
  const dataOpts = {
    maxPromptLength: cfg.data.max_prompt_length,
    promptKey: cfg.data.prompt_key,
    dataSourceKey: cfg.data.reward_fn_key,
    truncation: cfg.data.truncation,
    filterOverlongPrompts: cfg.data.filter_overlong_prompts,
  };
  const pick = (max: number) => ({
    max,
    shuffle: cfg.data.shuffle,
    seed: dataSeed(cfg),
  });
  const train = await RLDataset.load(cfg.data.train_files, tokenizer, {
    ...dataOpts,
    maxSamples: pick(cfg.data.train_max_samples),
  });
  const val = await RLDataset.load(cfg.data.val_files, tokenizer, {
    ...dataOpts,
    maxSamples: pick(cfg.data.val_max_samples),
  });
  const reward = await createRewardManager(cfg, { tokenizer, log: print });
  const mt = cfg.actor_rollout_ref.rollout.multi_turn;
  checkAgentUsed(mt, {
    prefix: "actor_rollout_ref.rollout.multi_turn",
    agentRows: [...train.items, ...val.items].some((it) => it.agentName === "tool_agent"),
  });
  const agentEnv = await loadAgentEnv(mt);
  try {
    checkInteractionRows([...train.items, ...val.items], agentEnv.interactions);
  } catch (e) {
    closeAgentEnv(agentEnv);
    throw e;
  }
  // Metric files are cut back to the resumed step (a fresh run moves an earlier run's aside).
  const tracking = createTracking(t.logger, {
    ...where,
    resumeStep: resume?.step ?? -1,
    print,
  });
  const trainDump = jsonlDumper(t.rollout_data_dir);
  const valDump = jsonlDumper(t.validation_data_dir);
  const eosTokenIds = stopTokenIds(tokenizer.eosTokenId, {
    generationConfig: base.generationConfig,
    configEos: base.config.eosTokenId,
  });
  // The reference policy always starts from the original model, also when resuming.
  const parts = buildTrainerParts({
    config: cfg,
    tokenizer,
    actor,
    reference: resumePath ? base : undefined,
    critic,
    actorLora,
    criticLora,
    // vLLM (verl's rollout) stops on every EOS id of generation_config.json and config.json.
    eosTokenIds,
    trainItems: train.items,
    valItems: val.items,
    tracking,
    reward,
    tools: mt.tool_config_path ? agentEnv.tools : undefined,
    interactions: mt.interaction_config_path ? agentEnv.interactions : undefined,
    print,
    onGenerations: (kind, step, rows) => (kind === "train" ? trainDump : valDump)?.(step, rows),
    peakMemoryBytes: () => gpu().pool.peakBytes,
    peakReservedBytes: () => gpu().pool.peakReservedBytes,
  });
  if (cfg.distributed.backend === "nats") {
    await attachRemote(parts, { modelConfig: actor.config, tokenizerFiles: files, eosTokenIds });
  }
  parts.checkpoints = new FolderCheckpointStore({
    root: t.default_local_dir,
    parts: {
      actor: {
        config: actor.config,
        model: parts.actor.model,
        optimizer: parts.actor.optimizer,
        files,
      },
      critic: parts.critic
        ? {
          config: (critic ?? actor).config,
          model: parts.critic.model,
          optimizer: parts.critic.optimizer,
        }
        : null,
    },
    configYaml,
    partsToKeep: { actor: t.max_actor_ckpt_to_keep, critic: t.max_critic_ckpt_to_keep },
    resume,
  });
  return parts;
}
