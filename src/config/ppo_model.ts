/** `actor_rollout_ref.model.*` and the verl model keys it shares with `critic.model.*`. */
import { loraFields } from "./common.ts";
import { bool, float, int, map, oneOf, ref, section, str } from "./schema.ts";
import { DENSE_MODELS, NO_ACTIVATION_TRICKS } from "./verl_reasons.ts";

/**
 * verl's HF model keys that describe how a model folder loads here, at the one value that does
 * (`at` is the section's dotted key, for the inert keys' switch).
 */
export function hfModelVerlKeys(at: string) {
  return {
    trust_remote_code: bool(
      false,
      "Run a model folder's own Python code (transformers' auto_map); never here: a folder's " +
        "architecture must be a built-in family.",
    ).unsupported("no model code is run here: the folder's architecture must be a built-in family"),
    use_shm: bool(false, "verl: load the model through shared memory (/dev/shm).").unsupported(
      "weights load from the folder straight to the GPU; there is no shared-memory staging",
    ),
    override_config: map("Entries that replace those of the model's config.json.").unsupported(
      "edit the model folder's config.json instead",
    ),
    enable_activation_offload: bool(false, "verl: offload activations to the CPU.").unsupported(
      NO_ACTIVATION_TRICKS,
    ),
    tiled_mlp: section("verl's TiledMLP: the MLP in tiles to lower peak memory.", {
      enabled: bool(false, "Run the MLP in tiles.").unsupported(NO_ACTIVATION_TRICKS),
      num_shards: int(4, "Tiles the input is split into.").inertWhile(`${at}.tiled_mlp.enabled`),
    }),
  };
}

const MTP = "actor_rollout_ref.model.mtp.enable";

/** verl's multi-token-prediction settings: switched off (enable) with the rest inert. */
const mtp = section("verl's MTP (multi-token prediction) layers of the model.", {
  enable: bool(false, "Load and save the model's MTP layers.").unsupported(DENSE_MODELS),
  enable_train: bool(false, "Train the MTP layers.").inertWhile(MTP),
  enable_rollout: bool(false, "Draft tokens with the MTP layers in the rollout.").inertWhile(MTP),
  detach_encoder: bool(false, "Detach the trunk from the MTP loss.").inertWhile(MTP),
  mtp_loss_scaling_factor: float(0.1, "Weight of the MTP loss.").inertWhile(MTP),
  speculative_algorithm: str("EAGLE", "SGLang's speculative algorithm.").inertWhile(MTP),
  speculative_num_steps: int(2, "SGLang's speculative steps.").inertWhile(MTP),
  speculative_eagle_topk: int(2, "SGLang's EAGLE top-k.").inertWhile(MTP),
  speculative_num_draft_tokens: int(4, "SGLang's draft tokens.").inertWhile(MTP),
  method: str("mtp", "vLLM's speculative method.").inertWhile(MTP),
  num_speculative_tokens: int(1, "vLLM's speculative tokens.").inertWhile(MTP),
});

export const ppoModel = section("The policy model (a Hugging Face folder).", {
  path: str(
    null,
    "Model folder with config.json, *.safetensors and tokenizer files; null builds the " +
      "built-in tiny character-level model from scratch.",
    { isPath: true },
  ),
  hf_config_path: str(null, "verl: a folder whose config.json replaces the model's.", {
    isPath: true,
  }).unsupported("config.json is read from model.path, beside the weights: put it there"),
  tokenizer_path: str(
    null,
    "verl's tokenizer folder of the model; the same as data.tokenizer, which it sets (both set " +
      "to different folders is an error).",
    { isPath: true },
  ),
  dtype: oneOf(["float32", "float16"], "float32", "Parameter dtype on the GPU.").unsupported(
    "the trainer keeps float32 weights",
  ),
  use_remove_padding: bool(
    false,
    "Pack each micro-batch's real tokens (no pads) for the embedding, norms, linear layers and " +
      "the LM head in the actor, rollout log-prob and reference passes; attention runs padded. " +
      "The same results up to f32 rounding, less work on ragged batches.",
  ),
  enable_gradient_checkpointing: bool(
    false,
    "Keep only each decoder layer's input for the backward pass, which runs the layer again: " +
      "less GPU memory for one more forward; the same gradients.",
  ),
  ...loraFields(),
  ...hfModelVerlKeys("actor_rollout_ref.model"),
  custom_chat_template: str(
    null,
    "A Jinja chat template used instead of the tokenizer's; saved with the checkpoints as " +
      "chat_template.jinja.",
  ),
  mtp,
});

/** The actor's copy of rollout.n (verl's `rollout_n` of actor, ref and critic). */
export function rolloutN() {
  return int(
    ref("actor_rollout_ref.rollout.n"),
    "verl's copy of actor_rollout_ref.rollout.n (it scales mini-batches by it).",
  ).derived();
}
