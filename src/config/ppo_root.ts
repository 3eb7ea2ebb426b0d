/** The sections of the PPO/GRPO trainer config and its resolved type. */
import { LOGGERS } from "../tracking/mod.ts";
import { deviceCounts } from "./common.ts";
import { ppoActorRolloutRef } from "./ppo_actor.ts";
import { ppoAlgorithm } from "./ppo_algorithm.ts";
import { ppoCritic } from "./ppo_critic.ts";
import { ppoCustomReward, ppoRewardManager, ppoRewardModel } from "./ppo_reward.ts";
import { ppoData } from "./ppo_data.ts";
import { ppoDistributed } from "./ppo_distributed.ts";
import { bool, type Infer, int, oneOf, section, str, strList } from "./schema.ts";

export const ppoTrainerSection = section("Run control: length, logging, checkpoints, devices.", {
  total_epochs: int(30, "Passes over the training prompts.", { min: 1 }),
  total_training_steps: int(null, "Stop after this many steps; null = total_epochs worth.", {
    min: 1,
  }),
  project_name: str("webrl_examples", "Project name (logs and checkpoint folder)."),
  experiment_name: str("arithmetic", "Run name (logs and checkpoint folder)."),
  logger: strList(["console"], "Metric sinks: console, file (JSONL), tensorboard.", {
    choices: LOGGERS,
  }),
  log_val_generations: int(0, "Validation samples printed per validation run.", { min: 0 }),
  rollout_data_dir: str(null, "Folder for JSONL dumps of every training rollout; null = none."),
  validation_data_dir: str(null, "Folder for JSONL dumps of validation generations."),
  ...deviceCounts(),
  save_freq: int(-1, "Checkpoint every N steps (and at the end); -1 = never (0 is refused).", {
    min: -1,
  }),
  test_freq: int(-1, "Validate every N steps (and at the end); -1 = never (0 is refused).", {
    min: -1,
  }),
  val_before_train: bool(true, "Validate once before the first step."),
  val_only: bool(false, "Validate and exit without training."),
  critic_warmup: int(0, "Steps that update only the critic before the actor starts.", {
    min: 0,
  }),
  default_local_dir: str(
    "checkpoints/${trainer.project_name}/${trainer.experiment_name}",
    "Checkpoint root; holds global_step_N/ and latest_checkpointed_iteration.txt.",
  ),
  resume_mode: oneOf(
    ["auto", "disable", "resume_path"],
    "auto",
    "auto: latest checkpoint in default_local_dir if any; disable; resume_path: resume_from_path.",
  ),
  resume_from_path: str(null, "global_step_N folder to resume from (resume_mode=resume_path)."),
  resume_allowed_changes: strList(
    [],
    "Keys that change the model, shapes or data order (model path, dtype, rollout.n, batch " +
      "sizes, data files, seeds) yet may differ from the resumed checkpoint's saved config; " +
      "without this such a difference is an error. Other differences are printed as warnings.",
  ),
  max_actor_ckpt_to_keep: int(null, "Keep only the newest N actor checkpoints; null keeps all.", {
    min: 1,
  }),
  max_critic_ckpt_to_keep: int(null, "Keep only the newest N critic checkpoints; null keeps all.", {
    min: 1,
  }),
  max_nonfinite_steps: int(
    3,
    "Stop with an error after this many consecutive steps in which an optimizer update was " +
      "skipped for a NaN/Inf gradient norm (a run whose weights or data went bad). Under mixed " +
      "precision's loss scaling, a step skipped while the loss scale was above 1 does not count " +
      "(the scaler backs off); one skipped at scale 1 does.",
    { min: 1 },
  ),
  seed: int(1, "Seed of model init, sampling and mini-batch shuffles."),
  device: oneOf(["webgpu", "cpu"], "webgpu", "webgpu (any adapter) or the CPU reference path."),
  esi_redundant_time: int(0, "verl: seconds kept before an elastic instance expires, to save.")
    .unsupported("there is no elastic server instance expiry to save ahead of here"),
  use_legacy_worker_impl: oneOf(
    ["auto", "enable", "disable"],
    "auto",
    "verl's choice of worker implementation: auto and enable (its legacy workers, the default) " +
      "describe this trainer (the actor clips with actor.grad_clip).",
  ).unsupported(
    "verl's new engine workers (disable) read other keys (optim.clip_grad, data_loader_seed); " +
      "this trainer follows its legacy workers",
    ["enable"],
  ),
});

export const ppoRoot = section("PPO/GRPO trainer.", {
  data: ppoData,
  actor_rollout_ref: ppoActorRolloutRef,
  critic: ppoCritic,
  reward_model: ppoRewardModel,
  reward_manager: ppoRewardManager,
  custom_reward_function: ppoCustomReward,
  algorithm: ppoAlgorithm,
  trainer: ppoTrainerSection,
  transfer_queue: section("verl's TransferQueue data system.", {
    enable: bool(false, "Move batches through TransferQueue.").unsupported(
      "batches stay in the trainer's process (distributed.backend=nats moves rollouts between " +
        "processes)",
    ),
  }),
  distributed: ppoDistributed,
});

/** The resolved PPO/GRPO trainer config. */
export type PpoConfig = Infer<typeof ppoRoot>;
