import assert from "node:assert/strict";
import { ConfigError } from "./errors.ts";
import { loadConfig } from "./load.ts";

const load = (...overrides: string[]) =>
  loadConfig("ppo_trainer", { overrides, skipPathChecks: true });
const refused = (key: string, why: RegExp, ...overrides: string[]) =>
  assert.throws(
    () => load(...overrides),
    (e: unknown) => e instanceof ConfigError && e.key === key && why.test(e.message),
  );

Deno.test("distributed and rollout_correction keys: what runs, and what is refused by name", () => {
  const ok = load("distributed.backend=nats", "distributed.max_staleness=1");
  assert.equal(ok.distributed.max_staleness, 1);
  assert.equal(ok.distributed.backend, "nats");
  // Workers always send log-probs; in process the sampler must keep them.
  load("distributed.backend=nats", "algorithm.rollout_correction.rollout_is=token");
  refused(
    "algorithm.rollout_correction.rollout_is",
    /calculate_log_probs=true/,
    "algorithm.rollout_correction.rollout_is=sequence",
  );
  load(
    "algorithm.rollout_correction.rollout_is=sequence",
    "actor_rollout_ref.rollout.calculate_log_probs=true",
  );
  refused(
    "distributed.backend",
    /multi_turn/,
    "distributed.backend=nats",
    "actor_rollout_ref.rollout.multi_turn.enable=true",
  );
  refused(
    "distributed.backend",
    /LoRA/,
    "distributed.backend=nats",
    "actor_rollout_ref.model.lora_rank=8",
  );
  refused(
    "distributed.max_staleness",
    /filter_groups/,
    "distributed.backend=nats",
    "distributed.max_staleness=1",
    "algorithm.filter_groups.enable=true",
    "algorithm.filter_groups.metric=acc",
  );
  refused(
    "distributed.token",
    /one of/,
    "distributed.backend=nats",
    "distributed.token=t",
    "distributed.nkey_seed=SU",
  );
  assert.throws(() => load("distributed.backend=ray"), /distributed\.backend/);
});

Deno.test("rollout_correction.bypass_mode and loss_type: what runs, and what is refused by name", () => {
  const RC = "algorithm.rollout_correction";
  const on = [`${RC}.bypass_mode=true`, "actor_rollout_ref.rollout.calculate_log_probs=true"];
  const ok = load(...on);
  assert.equal(ok.algorithm.rollout_correction.bypass_mode, true);
  assert.equal(ok.algorithm.rollout_correction.loss_type, "ppo_clip");
  load(...on, "distributed.backend=nats", "distributed.max_staleness=1");
  load(...on, `${RC}.loss_type=reinforce`, `${RC}.rollout_is=sequence`);
  load(...on, `${RC}.loss_type=reinforce`);
  // the message names both keys
  refused(
    `${RC}.bypass_mode`,
    /bypass_mode=true .*actor_rollout_ref\.rollout\.calculate_log_probs=true/,
    `${RC}.bypass_mode=true`,
  );
  refused(
    "actor_rollout_ref.actor.policy_loss.loss_mode",
    /loss_mode=gspo cannot be honoured/,
    ...on,
    "actor_rollout_ref.actor.policy_loss.loss_mode=gspo",
  );
  refused(
    "actor_rollout_ref.actor.policy_loss.loss_mode",
    /bypass_mode=true and algorithm\.rollout_correction\.loss_type=reinforce instead/,
    "actor_rollout_ref.actor.policy_loss.loss_mode=reinforce",
  );
  refused(`${RC}.loss_type`, /bypass mode only/, `${RC}.loss_type=reinforce`);
  refused(`${RC}.rollout_is`, /already is the importance weight/, ...on, `${RC}.rollout_is=token`);
  refused(
    `${RC}.bypass_mode`,
    /sum_pi_squared/,
    ...on,
    "algorithm.adv_estimator=optimal_token_baseline",
    "actor_rollout_ref.rollout.n=2",
  );
  assert.throws(() => load(...on, `${RC}.loss_type=ppo`), /loss_type/);
});
