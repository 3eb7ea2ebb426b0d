/**
 * One training step for every registered advantage estimator, built the way the registry says
 * (critic, groups, greedy baseline rollout, Σπ²): a name the trainer cannot run fails here.
 */
import assert from "node:assert/strict";
import { ADV_ESTIMATORS } from "../src/algos/mod.ts";
import { initGpu } from "../src/gpu/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { fit, setupTrainer } from "../src/trainer/mod.ts";
import type { Logger } from "../src/tracking/mod.ts";
import { makeTinyRun } from "./tiny_run.ts";

Deno.test({
  name: "every registered advantage estimator trains one step with what its entry asks for",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await initGpu();
    const dir = Deno.makeTempDirSync({ prefix: "webrl_estimators_" });
    const tiny = await makeTinyRun(dir);
    const names = ADV_ESTIMATORS.names();
    assert.ok(names.length >= 13, `only ${names.length} estimators registered`);
    for (const name of names) {
      const e = ADV_ESTIMATORS.get(name);
      const cfg = loadConfig("ppo_trainer", {
        overrides: [
          ...tiny.overrides,
          "trainer.total_training_steps=1",
          `trainer.experiment_name=${name}`,
          `algorithm.adv_estimator=${name}`,
        ],
      });
      const parts = await setupTrainer(cfg, { print: () => {} });
      assert.equal(parts.critic !== null, e.critic === true, `${name}: critic built`);
      let m: Record<string, number> = {};
      const sink: Logger = { log: (_s, x) => void (m = { ...m, ...x }), close() {} };
      parts.tracking = sink;
      const t0 = performance.now();
      const res = await fit(parts);
      const at = `${name} (${((performance.now() - t0) / 1000).toFixed(2)} s)`;
      assert.equal(res.globalStep, 1, at);
      for (const k of ["critic/advantages/mean", "actor/pg_loss", "actor/grad_norm"]) {
        assert.ok(Number.isFinite(m[k]), `${at}: ${k} = ${m[k]}`);
      }
      assert.equal("timing_s/gen_max" in m, e.greedyBaseline === true, `${at}: gen_max`);
      assert.equal("critic/vf_loss" in m, e.critic === true, `${at}: critic update`);
    }
    Deno.removeSync(dir, { recursive: true });
  },
});

Deno.test({
  name: "DAPO: dynamic sampling over generation batches and the overlong penalty train a step",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await initGpu();
    const dir = Deno.makeTempDirSync({ prefix: "webrl_dapo_" });
    const tiny = await makeTinyRun(dir, { trainSize: 12 });
    const cfg = loadConfig("ppo_trainer", {
      overrides: [
        ...tiny.overrides,
        "trainer.total_training_steps=1",
        "algorithm.adv_estimator=grpo",
        "algorithm.filter_groups.enable=true",
        "algorithm.filter_groups.metric=seq_reward",
        "algorithm.filter_groups.max_num_gen_batches=20",
        "data.gen_batch_size=2", // train_batch_size 4: at least two generation batches
        "reward_model.reward_manager=dapo",
        "reward_model.overlong_buffer.enable=true",
        "reward_model.overlong_buffer.len=6",
        "actor_rollout_ref.rollout.n=4",
        "reward_model.overlong_buffer.penalty_factor=1.0",
        "reward_model.overlong_buffer.log=true",
      ],
    });
    const parts = await setupTrainer(cfg, { print: () => {} });
    let m: Record<string, number> = {};
    parts.tracking = { log: (_s, x) => void (m = { ...m, ...x }), close() {} };
    assert.equal((await fit(parts)).globalStep, 1);
    assert.ok(
      m["train/num_gen_batches"] >= 2,
      `train/num_gen_batches = ${m["train/num_gen_batches"]}`,
    );
    assert.ok(Number.isFinite(m["reward/overlong_reward/mean"]), "overlong metrics logged");
    assert.ok(m["reward/overlong_reward/mean"] <= 0);
    // every kept group varies, so GRPO's advantages are not all zero
    assert.ok(m["critic/advantages/max"] > 0, `advantages max ${m["critic/advantages/max"]}`);
    Deno.removeSync(dir, { recursive: true });
  },
});
