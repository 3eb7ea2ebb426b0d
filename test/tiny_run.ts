/**
 * Fixtures for end-to-end trainer tests: a tiny random model folder with the character tokenizer
 * and small arithmetic parquet files, plus the overrides that point a run at them.
 */
import { charTokenizerTexts } from "../src/io/mod.ts";
import { writeModelFolder } from "../src/io/mod.ts";
import { floatTensor } from "../src/io/mod.ts";
import { tinyModelConfig, tinyWeights, weightShapes } from "../src/nn/mod.ts";
import { generateArithmetic, writeParquet } from "../src/data/mod.ts";
import { setupTrainer, tokenizerFromFiles, type TrainerParts } from "../src/trainer/mod.ts";
import { loadConfig } from "../src/config/mod.ts";

export async function makeTinyRun(
  dir: string,
  options: { trainSize?: number; valSize?: number } = {},
): Promise<{ modelPath: string; overrides: string[] }> {
  const files = charTokenizerTexts();
  const tok = tokenizerFromFiles(files, "char tokenizer");
  const config = tinyModelConfig({ vocabSize: tok.vocabSize, eosTokenId: tok.eosTokenId });
  const shapes = weightShapes(config);
  const arrays = tinyWeights(config, { seed: 7 });
  const tensors = new Map([...arrays].map(([k, v]) => [k, floatTensor(shapes.get(k)!, v)]));
  const modelPath = `${dir}/model`;
  await writeModelFolder(modelPath, { config, tensors, tokenizerFiles: files });
  const train = generateArithmetic({ count: options.trainSize ?? 8, digits: 1, seed: 1 });
  const val = generateArithmetic({ count: options.valSize ?? 4, digits: 1, seed: 2, split: "val" });
  await writeParquet(`${dir}/train.parquet`, { rows: train });
  await writeParquet(`${dir}/val.parquet`, { rows: val });
  return {
    modelPath,
    overrides: [
      `data.train_files=${dir}/train.parquet`,
      `data.val_files=${dir}/val.parquet`,
      "data.max_prompt_length=16",
      "data.max_response_length=6",
      "data.train_batch_size=4",
      `actor_rollout_ref.model.path=${modelPath}`,
      "actor_rollout_ref.actor.ppo_mini_batch_size=2",
      "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
      "actor_rollout_ref.actor.optim.lr=1e-3",
      "actor_rollout_ref.rollout.n=2",
      "critic.ppo_mini_batch_size=2",
      "critic.ppo_micro_batch_size_per_gpu=4",
      "trainer.val_before_train=false",
      "trainer.logger=[file]",
      `trainer.default_local_dir=${dir}/ckpt`,
      `trainer.experiment_name=${dir.split("/").at(-1)}`,
    ],
  };
}

/**
 * A tiny run's trainer parts with `distributed.backend=nats` on the test server `s` under
 * `prefix` (3 steps), in a temporary folder the caller removes.
 */
export async function tinyNatsTrainer(
  s: { url: string; trainerSeed: string },
  prefix: string,
  extra: string[] = [],
): Promise<{ parts: TrainerParts; dir: string }> {
  const dir = Deno.makeTempDirSync({ prefix: "webrl_dist_" });
  const tiny = await makeTinyRun(dir);
  const cfg = loadConfig("ppo_trainer", {
    overrides: [
      ...tiny.overrides,
      "trainer.total_training_steps=3",
      "distributed.backend=nats",
      `distributed.url=${s.url}`,
      `distributed.subject_prefix=${prefix}`,
      `distributed.nkey_seed=${s.trainerSeed}`,
      ...extra,
    ],
  });
  return { parts: await setupTrainer(cfg, { print: () => {} }), dir };
}
