/**
 * One GRPO training step with every registered policy loss on the tiny model: the step runs on the
 * GPU path, the gradient reaches the weights, and the actor reports exactly verl's metrics for
 * that loss. A reward by response length gives the untrained model's samples different scores,
 * so the advantages (and the policy gradient) are not all zero.
 */
import assert from "node:assert/strict";
import { POLICY_LOSS_METRICS, POLICY_LOSSES } from "../src/algos/mod.ts";
import { initGpu } from "../src/gpu/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { fit, setupTrainer } from "../src/trainer/mod.ts";
import type { Logger } from "../src/tracking/mod.ts";
import { makeTinyRun } from "./tiny_run.ts";

const A = "actor_rollout_ref.actor";

/** Keys that make clip_cov and kl_cov choose several tokens of a tiny batch. */
const KEYS: Record<string, string[]> = {
  clip_cov: [
    `${A}.policy_loss.clip_cov_ratio=0.2`,
    `${A}.policy_loss.clip_cov_lb=-10`,
    `${A}.policy_loss.clip_cov_ub=10`,
  ],
  kl_cov: [`${A}.policy_loss.kl_cov_ratio=0.2`],
};

/** How each loss is chosen: its loss_mode, except bypass mode's reinforce. */
function choose(name: string): string[] {
  if (name !== "reinforce") return [`${A}.policy_loss.loss_mode=${name}`, ...(KEYS[name] ?? [])];
  const RC = "algorithm.rollout_correction";
  return [
    `${RC}.bypass_mode=true`,
    `${RC}.loss_type=reinforce`,
    `${RC}.rollout_is=sequence`,
    "actor_rollout_ref.rollout.calculate_log_probs=true",
  ];
}

Deno.test({
  name: "every registered policy loss trains one GRPO step on the GPU",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await initGpu();
    const dir = Deno.makeTempDirSync({ prefix: "webrl_losses_" });
    const tiny = await makeTinyRun(dir);
    const reward = `${dir}/reward.ts`;
    Deno.writeTextFileSync(
      reward,
      "export function compute_score(_d, text) { return text.length % 3; }\n",
    );
    for (const name of POLICY_LOSSES.names()) {
      const cfg = loadConfig("ppo_trainer", {
        overrides: [
          ...tiny.overrides,
          "algorithm.adv_estimator=grpo",
          "trainer.total_training_steps=1",
          `trainer.default_local_dir=${dir}/ckpt_${name}`,
          "trainer.save_freq=-1",
          `custom_reward_function.path=${reward}`,
          ...choose(name),
        ],
      });
      const parts = await setupTrainer(cfg, { print: () => {} });
      const logged: Record<string, number> = {};
      const sink: Logger = { log: (_, m) => Object.assign(logged, m), close() {} };
      parts.tracking = sink;
      const res = await fit(parts);
      assert.equal(res.globalStep, 1, name);
      const own: readonly string[] = POLICY_LOSSES.get(name).metrics;
      for (const key of ["actor/pg_loss", "actor/grad_norm", ...own]) {
        assert.ok(Number.isFinite(logged[key]), `${name}: ${key} = ${logged[key]}`);
      }
      for (const key of POLICY_LOSS_METRICS) {
        if (!own.includes(key)) assert.ok(!(key in logged), `${name} reports no ${key}`);
      }
      assert.ok(logged["actor/grad_norm"] > 0, `${name}: the gradient reached the weights`);
    }
    Deno.removeSync(dir, { recursive: true });
  },
});
