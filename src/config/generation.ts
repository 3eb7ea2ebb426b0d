/** The generator schema (verl's generation.yaml): prompts parquet in, responses parquet out. */
import { deviceCounts, rolloutEngineName } from "./common.ts";
import { ConfigError } from "./errors.ts";
import { enginePoolKeys, ROLLOUT_DTYPES } from "./ppo_rollout.ts";
import { multiTurn, verlEngineKeys } from "./rollout_verl_keys.ts";
import { bool, type ConfigSchema, float, type Infer, int, oneOf, section, str } from "./schema.ts";

export const generationRoot = section("Batch generation.", {
  trainer: section("Devices.", {
    ...deviceCounts(),
    device: oneOf(["webgpu", "cpu"], "webgpu", "webgpu (any adapter) or the CPU reference path."),
    seed: int(1, "Sampling seed."),
  }),
  data: section("Input prompts and output file.", {
    path: str("data/arithmetic/val.parquet", "Parquet of prompts (verl row schema).", {
      isPath: true,
    }),
    prompt_key: str("prompt", "Column holding the chat messages of each prompt."),
    n_samples: int(1, "Responses generated per prompt.", { min: 1 }),
    output_path: str(
      "outputs/generations.parquet",
      "Output parquet: the input columns plus `responses` (a list of n_samples strings).",
    ),
    batch_size: int(128, "Prompts generated together.", { min: 1 }),
    max_prompt_length: int(512, "Longest prompt in tokens.", { min: 1 }),
    truncation: oneOf(
      ["error", "left", "right", "middle"],
      "error",
      "Overlong prompts: error, left, right or middle truncation.",
    ),
  }),
  model: section("The model to sample from.", {
    path: str(null, "Hugging Face model folder; null uses the built-in tiny model.", {
      isPath: true,
    }),
    dtype: oneOf(
      ["float32", "float16"],
      "float32",
      "Parameter dtype on the GPU (float16 needs shader-f16; rollout.dtype=float16 loads f16 too).",
    ),
  }),
  rollout: section("Sampling.", {
    ...verlEngineKeys(),
    name: rolloutEngineName("Generation engine."),
    dtype: oneOf(
      ROLLOUT_DTYPES,
      "float32",
      "What the engine decodes with: float16 is an f16 KV cache, and the weight matrices and " +
        "lm_head loaded in f16 (as model.dtype=float16 does) where the GPU has shader-f16, else " +
        "f32 with a notice; float32 is an f32 KV cache with weights as model.dtype says. verl's " +
        "default bfloat16 does not exist on WebGPU: use float16 or float32.",
    ),
    temperature: float(1.0, "Sampling temperature; 0 decodes greedily (argmax), as in vLLM.", {
      min: 0,
    }),
    top_k: int(50, "Keep the k likeliest tokens (-1 or 0 = off)."),
    top_p: float(0.7, "Nucleus sampling threshold.", { min: 0, max: 1 }),
    do_sample: bool(true, "Sample; false decodes greedily."),
    prompt_length: int(512, "Prompt tokens the engine accepts.", { min: 1 }),
    response_length: int(512, "Most tokens generated per response.", { min: 1 }),
    ignore_eos: bool(false, "Keep generating after EOS."),
    ...enginePoolKeys("batch_size * n_samples"),
    multi_turn: multiTurn,
  }),
});

export type GenerationConfig = Infer<typeof generationRoot>;

export const generationSchema: ConfigSchema<typeof generationRoot> = {
  name: "generation",
  title: "Generator config (deno task generate): prompts parquet in, `responses` column out.",
  root: generationRoot,
  check: (cfg) => {
    if (!cfg.rollout.do_sample && cfg.data.n_samples > 1) {
      throw new ConfigError(
        "data.n_samples",
        `data.n_samples=${cfg.data.n_samples} with rollout.do_sample=false gives identical ` +
          "responses; set rollout.do_sample=true or data.n_samples=1",
      );
    }
  },
};
