/**
 * PPO with a critic (GAE) improves held-out greedy accuracy on the embedded task, starting from
 * the shipped tiny checkpoint (the GRPO default run is longer; its figures are in the README).
 */
import assert from "node:assert/strict";
import { initGpu } from "../src/gpu/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { fit } from "../src/trainer/mod.ts";
import { setupTrainer } from "../src/trainer/mod.ts";
import type { Logger } from "../src/tracking/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;

Deno.test({
  name: "PPO with a critic (gae) raises validation accuracy within 20 steps",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await initGpu();
    const dir = Deno.makeTempDirSync({ prefix: "webrl_gae_" });
    const cfg = loadConfig("ppo_trainer", {
      files: [`${ROOT}configs/arithmetic_grpo.yaml`],
      overrides: [
        `data.train_files=${ROOT}data/arithmetic/train.parquet`,
        `data.val_files=${ROOT}data/arithmetic/val.parquet`,
        `actor_rollout_ref.model.path=${ROOT}assets/tiny_arith`,
        "algorithm.adv_estimator=gae",
        "actor_rollout_ref.rollout.n=1",
        "data.train_batch_size=64",
        "actor_rollout_ref.actor.ppo_mini_batch_size=64",
        "critic.ppo_mini_batch_size=64",
        "critic.ppo_micro_batch_size_per_gpu=64",
        "critic.optim.lr=1e-3",
        "trainer.total_training_steps=20",
        "trainer.test_freq=20",
        "trainer.logger=[]",
        "trainer.log_val_generations=0",
        `trainer.default_local_dir=${dir}`,
      ],
    });
    const parts = await setupTrainer(cfg, { print: () => {} });
    const val: number[] = [];
    const sink: Logger = {
      log: (_s, m) => {
        const k = Object.keys(m).find((k) => k.startsWith("val-core/"));
        if (k) val.push(m[k]);
      },
      close() {},
    };
    parts.tracking = sink;
    await fit(parts);
    assert.equal(val.length, 2, `validation ran ${val.length} times`);
    const [before, after] = val;
    assert.ok(after >= before + 0.1, `accuracy ${before} -> ${after}: less than +10 points`);
    Deno.removeSync(dir, { recursive: true });
  },
});
