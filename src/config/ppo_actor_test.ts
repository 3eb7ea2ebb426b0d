import assert from "node:assert/strict";
import { POLICY_LOSSES } from "../algos/mod.ts";
import { ConfigError } from "./errors.ts";
import { loadConfig } from "./load.ts";

const load = (overrides: string[]) =>
  loadConfig("ppo_trainer", { overrides, skipPathChecks: true });
const A = "actor_rollout_ref.actor";

Deno.test("every registered policy loss loads, and its keys reach the config", () => {
  // reinforce is bypass mode's loss, chosen by algorithm.rollout_correction.loss_type
  for (const name of POLICY_LOSSES.names().filter((n) => n !== "reinforce")) {
    const cfg = load([`${A}.policy_loss.loss_mode=${name}`]);
    assert.equal(cfg.actor_rollout_ref.actor.policy_loss.loss_mode, name);
  }
  const cfg = load([
    `${A}.policy_loss.loss_mode=clip_cov`,
    `${A}.policy_loss.clip_cov_ratio=0.01`,
    `${A}.policy_loss.clip_cov_lb=0.5`,
    `${A}.policy_loss.clip_cov_ub=4`,
    `${A}.clip_ratio_high=0.28`,
  ]);
  const pl = cfg.actor_rollout_ref.actor.policy_loss;
  assert.deepEqual([pl.clip_cov_ratio, pl.clip_cov_lb, pl.clip_cov_ub], [0.01, 0.5, 4]);
  const sapo = load([`${A}.policy_loss.loss_mode=sapo`, `${A}.tau_pos=1.5`, `${A}.tau_neg=2`]);
  assert.deepEqual([sapo.actor_rollout_ref.actor.tau_pos, sapo.actor_rollout_ref.actor.tau_neg], [
    1.5,
    2,
  ]);
});

Deno.test("a changed key the chosen loss does not read is an error naming it and its readers", () => {
  const cases: [string[], string, RegExp][] = [
    [[`${A}.tau_pos=2`], `${A}.tau_pos`, /not read by .*loss_mode=vanilla \(only by sapo\)/],
    [
      [`${A}.policy_loss.loss_mode=kl_cov`, `${A}.clip_ratio_c=10`],
      `${A}.clip_ratio_c`,
      /clip_ratio_c=10 is not read by .*loss_mode=kl_cov \(only by vanilla\)/,
    ],
    [
      [`${A}.policy_loss.loss_mode=gpg`, `${A}.clip_ratio_high=0.28`],
      `${A}.clip_ratio_high`,
      /only by vanilla, gspo, clip_cov, geo_mean, cispo/,
    ],
    [[`${A}.policy_loss.ppo_kl_coef=1`], `${A}.policy_loss.ppo_kl_coef`, /only by kl_cov/],
  ];
  for (const [overrides, key, message] of cases) {
    assert.throws(
      () => load(overrides),
      (e: Error) => e instanceof ConfigError && e.key === key && message.test(e.message),
      overrides.join(" "),
    );
  }
  // the defaults written out, as verl's YAML does, are fine with any loss
  load([`${A}.policy_loss.loss_mode=gpg`, `${A}.tau_pos=1.0`, `${A}.clip_ratio_c=3.0`]);
});

Deno.test("policy-loss keys out of range are errors", () => {
  const cases: [string[], string][] = [
    [[`${A}.policy_loss.loss_mode=sapo`, `${A}.tau_neg=0`], `${A}.tau_neg`],
    [
      [`${A}.policy_loss.loss_mode=clip_cov`, `${A}.policy_loss.clip_cov_ratio=0`],
      "clip_cov_ratio",
    ],
    [[`${A}.policy_loss.loss_mode=kl_cov`, `${A}.policy_loss.kl_cov_ratio=0`], "kl_cov_ratio"],
    [[`${A}.policy_loss.loss_mode=kl_cov`, `${A}.policy_loss.kl_cov_ratio=1.5`], "kl_cov_ratio"],
  ];
  for (const [overrides, key] of cases) {
    assert.throws(
      () => load(overrides),
      (e: Error) => e instanceof ConfigError && e.key.endsWith(key),
      overrides.join(" "),
    );
  }
});

Deno.test("clip_ratio sets both clip bounds unless they are given", () => {
  const a = (o: string[]) => load(o).actor_rollout_ref.actor;
  assert.deepEqual([a([]).clip_ratio_low, a([]).clip_ratio_high], [0.2, 0.2]);
  const moved = a([`${A}.clip_ratio=0.3`]);
  assert.deepEqual([moved.clip_ratio_low, moved.clip_ratio_high], [0.3, 0.3]);
  const dapo = a([`${A}.clip_ratio=0.3`, `${A}.clip_ratio_high=0.28`]);
  assert.deepEqual([dapo.clip_ratio_low, dapo.clip_ratio_high], [0.3, 0.28]);
});

Deno.test("LoRA keys: target_modules takes a name, a regex or a list; a number is refused", () => {
  const M = "actor_rollout_ref.model";
  const cfg = load([`${M}.lora_rank=16`, `${M}.target_modules=[q_proj,v_proj]`]);
  assert.equal(cfg.actor_rollout_ref.model.lora_rank, 16);
  assert.deepEqual(cfg.actor_rollout_ref.model.target_modules, ["q_proj", "v_proj"]);
  assert.equal(load([]).actor_rollout_ref.model.target_modules, "all-linear");
  assert.equal(load([]).actor_rollout_ref.model.exclude_modules, null);
  const re = load([`${M}.target_modules='.*q_proj'`, `${M}.exclude_modules=[down_proj]`]);
  assert.equal(re.actor_rollout_ref.model.target_modules, ".*q_proj");
  assert.deepEqual(re.actor_rollout_ref.model.exclude_modules, ["down_proj"]);
  assert.throws(
    () => load([`${M}.target_modules=3`]),
    (e: unknown) =>
      e instanceof ConfigError && e.key === `${M}.target_modules` &&
      /a name or a list of names/.test(e.message),
  );
  assert.equal(load(["critic.model.lora_rank=4"]).critic.model.lora_rank, 4);
});

Deno.test("a null micro-batch size (verl's default) needs that pass's use_dynamic_bsz", () => {
  const AR = "actor_rollout_ref";
  const c = load([
    `${AR}.actor.ppo_micro_batch_size_per_gpu=null`,
    `${AR}.rollout.log_prob_micro_batch_size_per_gpu=null`,
    `${AR}.actor.use_dynamic_bsz=True`,
  ]);
  assert.equal(c.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu, null);
  // The reference pass follows the rollout's size and budget switch, as in verl.
  assert.equal(c.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu, null);
  assert.equal(c.actor_rollout_ref.ref.log_prob_use_dynamic_bsz, true);
  assert.throws(
    () => load([`${AR}.actor.ppo_micro_batch_size_per_gpu=null`]),
    (e: Error) =>
      e instanceof ConfigError && e.key === `${AR}.actor.ppo_micro_batch_size_per_gpu` &&
      /needs actor_rollout_ref\.actor\.use_dynamic_bsz=True/.test(e.message),
  );
  assert.throws(
    () =>
      load([
        `${AR}.rollout.log_prob_micro_batch_size_per_gpu=null`,
        `${AR}.actor.use_dynamic_bsz=True`,
        `${AR}.rollout.log_prob_use_dynamic_bsz=False`,
      ]),
    /rollout\.log_prob_micro_batch_size_per_gpu=null .*rollout\.log_prob_use_dynamic_bsz=True/,
  );
});

Deno.test("a token budget below one whole sequence is an error naming its key", () => {
  const AR = "actor_rollout_ref";
  const base = ["data.max_prompt_length=16", "data.max_response_length=16"];
  const budgetError = (overrides: string[], key: string) =>
    assert.throws(
      () => load([...base, ...overrides]),
      (e: Error) =>
        e instanceof ConfigError && e.key === key && /=31 is below .* = 32/.test(e.message),
    );
  budgetError(
    [`${AR}.actor.use_dynamic_bsz=True`, `${AR}.actor.ppo_max_token_len_per_gpu=31`],
    `${AR}.actor.ppo_max_token_len_per_gpu`,
  );
  budgetError(
    [`${AR}.ref.log_prob_use_dynamic_bsz=True`, `${AR}.ref.log_prob_max_token_len_per_gpu=31`],
    `${AR}.ref.log_prob_max_token_len_per_gpu`,
  );
  budgetError(
    [
      "algorithm.adv_estimator=gae",
      "critic.use_dynamic_bsz=True",
      "critic.forward_max_token_len_per_gpu=31",
    ],
    "critic.forward_max_token_len_per_gpu",
  );
  // Off, a budget is not read.
  load([...base, `${AR}.actor.ppo_max_token_len_per_gpu=31`]);
});
