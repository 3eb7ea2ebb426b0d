/** `data.*` of the PPO/GRPO trainer: which parquet files, which columns, batch and length limits. */
import { maxSamplesFields } from "./common.ts";
import { verlPpoDataKeys } from "./verl_data_keys.ts";
import { TRUNCATIONS } from "../data/mod.ts";
import { bool, int, map, oneOf, paths, ref, section, str } from "./schema.ts";

export const ppoData = section("Prompts: files, columns, lengths and batch sizes.", {
  tokenizer: str(
    null,
    "Tokenizer folder (tokenizer.json, tokenizer_config.json, chat_template.jinja); null uses " +
      "the actor model's. Its files are saved with the checkpoints.",
    { isPath: true },
  ),
  apply_chat_template_kwargs: map(
    "Variables every chat template render sees, e.g. {enable_thinking: false} for Qwen3.",
  ),
  train_files: paths(
    "data/arithmetic/train.parquet",
    "Training parquet file, or a list of files read in order (verl row schema).",
  ),
  val_files: paths(
    "data/arithmetic/val.parquet",
    "Validation parquet file or list of files.",
  ),
  prompt_key: str("prompt", "Column holding the chat messages [{role, content}] of each prompt."),
  reward_fn_key: str(
    "data_source",
    "Column that selects the reward function and names the validation metrics.",
  ),
  max_prompt_length: int(512, "Longest prompt in tokens after the chat template.", { min: 1 }),
  max_response_length: int(512, "Most tokens generated per response.", { min: 1 }),
  train_batch_size: int(1024, "Prompts per training step (each sampled rollout.n times).", {
    min: 1,
  }),
  gen_batch_size: int(
    ref("data.train_batch_size"),
    "Prompts per generation batch. With algorithm.filter_groups.enable, batches of this size " +
      "are sampled until train_batch_size prompts survive the filter (DAPO oversamples with a " +
      "larger value); otherwise it must equal train_batch_size.",
    { min: 1 },
  ),
  val_batch_size: int(null, "Prompts per validation batch; null runs the whole set at once.", {
    min: 1,
  }),
  return_raw_chat: bool(
    true,
    "Keep each prompt's chat messages with it (verl's raw_prompt; true, verl's default since its " +
      "rollouts run in the agent loop): the agent loop renders them again with the tools' schemas.",
  ).unsupported(
    "each prompt's chat messages always stay with it, since the agent loop renders them again " +
      "(as verl's dataset always returns raw_prompt now)",
  ),
  ...maxSamplesFields(),
  shuffle: bool(true, "Shuffle the training prompts every epoch."),
  seed: int(
    1,
    "Seed of the training-set shuffle; null (verl's default, an unseeded shuffle there) takes " +
      "trainer.seed, so a run stays reproducible and resumable.",
  ).orNull(),
  filter_overlong_prompts: bool(
    false,
    "Drop prompts longer than max_prompt_length when loading instead of truncating them.",
  ),
  truncation: oneOf(
    TRUNCATIONS,
    "error",
    "Overlong prompts: error (stop, naming file and row), left/right (cut that side), middle.",
  ),
  ...verlPpoDataKeys(),
});

/** The seed of the training data's order: data.seed, or trainer.seed when it is null (verl's default). */
export function dataSeed(
  cfg: { data: { seed: number | null }; trainer: { seed: number } },
): number {
  return cfg.data.seed ?? cfg.trainer.seed;
}
