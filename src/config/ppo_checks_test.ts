import assert from "node:assert/strict";
import { ConfigError } from "./errors.ts";
import { loadConfig } from "./load.ts";
import { criticEnabled, sumPiSquaredEnabled } from "./ppo_checks.ts";
import { ADV_ESTIMATORS } from "../algos/mod.ts";

Deno.test("save_freq=0 and test_freq=0 are refused with the way to say never (-1)", () => {
  for (const key of ["save_freq", "test_freq"]) {
    assert.throws(
      () => loadConfig("ppo_trainer", { overrides: [`trainer.${key}=0`], skipPathChecks: true }),
      (e: Error) =>
        e instanceof ConfigError && e.key === `trainer.${key}` &&
        e.message.includes(`trainer.${key}=0 would never`) &&
        e.message.includes(`use trainer.${key}=-1 for never`),
    );
    for (const ok of ["-1", "1", "5"]) {
      loadConfig("ppo_trainer", { overrides: [`trainer.${key}=${ok}`], skipPathChecks: true });
    }
  }
  const cfg = loadConfig("ppo_trainer", {
    overrides: ["trainer.resume_allowed_changes=[actor_rollout_ref.rollout.n]"],
    skipPathChecks: true,
  });
  assert.deepEqual(cfg.trainer.resume_allowed_changes, ["actor_rollout_ref.rollout.n"]);
});

const load = (overrides: string[]) =>
  loadConfig("ppo_trainer", { overrides, skipPathChecks: true });

function rejected(overrides: string[], key: string, ...words: string[]): void {
  assert.throws(
    () => load(overrides),
    (e: Error) =>
      e instanceof ConfigError && e.key === key && words.every((w) => e.message.includes(w)),
    `${overrides.join(" ")} should be rejected under ${key} (${words.join(", ")})`,
  );
}

Deno.test("each estimator's registry flags decide its config checks and what is built", () => {
  const small = [
    "data.train_batch_size=4",
    "actor_rollout_ref.actor.ppo_mini_batch_size=2",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    "critic.ppo_micro_batch_size_per_gpu=2",
  ];
  for (const name of ADV_ESTIMATORS.names()) {
    const e = ADV_ESTIMATORS.get(name);
    const est = `algorithm.adv_estimator=${name}`;
    if (e.groups) {
      rejected(
        [...small, est, "actor_rollout_ref.rollout.n=1"],
        "actor_rollout_ref.rollout.n",
        name,
        "2 or more",
        "got 1",
      );
    }
    const cfg = load([
      ...small,
      est,
      "actor_rollout_ref.rollout.n=2",
      "critic.ppo_mini_batch_size=2",
    ]);
    assert.equal(criticEnabled(cfg), e.critic === true, `${name}: critic`);
    assert.equal(sumPiSquaredEnabled(cfg), e.sumPiSquared === true, `${name}: sum_pi_squared`);
    const spp = "actor_rollout_ref.actor.calculate_sum_pi_squared";
    rejected(
      [...small, est, "actor_rollout_ref.rollout.n=2", `${spp}=${!e.sumPiSquared}`],
      spp,
      name,
    );
  }
});

Deno.test("DAPO keys: filter_groups needs a metric, gen_batch_size needs filter_groups, overlong needs dapo", () => {
  const fg = "algorithm.filter_groups";
  rejected([`${fg}.enable=true`], `${fg}.metric`, "needs algorithm.filter_groups.metric");
  rejected(
    [`${fg}.enable=true`, `${fg}.metric=seq_final_reward`, "algorithm.use_kl_in_reward=true"],
    `${fg}.metric`,
    "use seq_reward",
  );
  rejected(["data.gen_batch_size=3"], "data.gen_batch_size", "filter_groups.enable=true");
  const ok = load([`${fg}.enable=true`, `${fg}.metric=acc`, "data.gen_batch_size=3"]);
  assert.equal(ok.algorithm.filter_groups.max_num_gen_batches, 0); // verl's default: no limit
  assert.equal(load([]).data.gen_batch_size, load([]).data.train_batch_size);
  const ob = "reward_model.overlong_buffer";
  rejected([`${ob}.enable=true`, `${ob}.len=4`], "reward_model.reward_manager", "=dapo");
  const dapo = "reward_model.reward_manager=dapo";
  rejected([dapo, `${ob}.enable=true`], `${ob}.len`, "[1, data.max_response_length=512]");
  rejected([dapo, `${ob}.enable=true`, `${ob}.len=513`], `${ob}.len`, "len=513");
  load([dapo, `${ob}.enable=true`, `${ob}.len=512`, `${ob}.penalty_factor=1`]);
  load([`${ob}.len=4`, `${fg}.metric=acc`]); // a disabled section's parameters are kept
});
