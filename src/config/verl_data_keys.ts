/** verl's `data.*` keys that describe how this trainer reads its rows, at the one value that does. */
import { bool, int, ref, section, str } from "./schema.ts";
import { NO_PYTHON_CLASSES, NO_VISION } from "./verl_reasons.ts";

/** The data keys both trainers share with verl (PPO's and SFT's data sections). */
export function verlDataKeys() {
  return {
    custom_cls: section("verl: a custom dataset class.", {
      path: str(null, "Module path of the class.").unsupported(NO_PYTHON_CLASSES),
      name: str(null, "Class name in that module.").inertWhile("data.custom_cls.path"),
    }),
    use_shm: bool(false, "verl: copy the data files through shared memory (/dev/shm).")
      .unsupported("the parquet files are read once, in the trainer's process"),
  };
}

/** The PPO trainer's further verl data keys. */
export function verlPpoDataKeys() {
  return {
    ...verlDataKeys(),
    tool_config_path: str(
      ref("actor_rollout_ref.rollout.multi_turn.tool_config_path"),
      "verl's copy of rollout.multi_turn.tool_config_path (the tools rendered with each prompt).",
      { isPath: true },
    ).orNull().derived(),
    image_patch_size: int(14, "verl: the vision encoder's patch size.").unsupported(NO_VISION),
    validation_shuffle: bool(false, "verl: shuffle the validation set.").unsupported(
      "validation runs the files' rows in order",
    ),
    filter_overlong_prompts_workers: int(1, "verl: processes filtering overlong prompts.")
      .unsupported("prompts are filtered in the trainer's process"),
    trust_remote_code: bool(false, "verl: run a tokenizer's own Python code.").unsupported(
      "tokenizers load from tokenizer.json; no Python code runs",
    ),
    return_multi_modal_inputs: bool(true, "verl: return the processor's image inputs.")
      .unsupported(NO_VISION),
    sampler: section("verl: a custom sampler class (curriculum learning).", {
      class_path: str(null, "Module path of the class.").unsupported(NO_PYTHON_CLASSES),
      class_name: str(null, "Class name in that module.").inertWhile("data.sampler.class_path"),
    }),
    datagen: section("verl: a dynamic data generator class.", {
      path: str(null, "Module path of the class.").unsupported(NO_PYTHON_CLASSES),
      name: str(null, "Class name in that module.").inertWhile("data.datagen.path"),
    }),
  };
}
