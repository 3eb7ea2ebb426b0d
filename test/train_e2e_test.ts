/** End-to-end training steps in-process: GRPO and PPO with a critic, verl's metric names. */
import assert from "node:assert/strict";
import { initGpu } from "../src/gpu/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { fit } from "../src/trainer/mod.ts";
import { readWeights, setupTrainer } from "../src/trainer/mod.ts";
import type { Logger } from "../src/tracking/mod.ts";
import { makeTinyRun } from "./tiny_run.ts";

async function run(extra: string[]): Promise<Map<number, Record<string, number>>> {
  await initGpu();
  const dir = Deno.makeTempDirSync({ prefix: "webrl_e2e_" });
  const tiny = await makeTinyRun(dir);
  const cfg = loadConfig("ppo_trainer", {
    overrides: [...tiny.overrides, "trainer.total_training_steps=2", ...extra],
  });
  const parts = await setupTrainer(cfg, { print: () => {} });
  const logged = new Map<number, Record<string, number>>();
  const sink: Logger = { log: (s, m) => logged.set(s, { ...logged.get(s), ...m }), close() {} };
  parts.tracking = sink;
  const res = await fit(parts);
  assert.equal(res.globalStep, 2);
  Deno.removeSync(dir, { recursive: true });
  return logged;
}

function assertFinite(m: Record<string, number>, keys: string[]): void {
  for (const k of keys) {
    assert.ok(k in m, `metric ${k} missing (have ${Object.keys(m).sort().join(", ")})`);
    assert.ok(Number.isFinite(m[k]), `metric ${k} = ${m[k]}`);
  }
}

const COMMON = [
  "critic/score/mean",
  "critic/advantages/mean",
  "critic/returns/mean",
  "actor/pg_loss",
  "actor/pg_clipfrac",
  "actor/ppo_kl",
  "actor/entropy",
  "actor/grad_norm",
  "actor/lr",
  "response_length/mean",
  "response_length/clip_ratio",
  "prompt_length/mean",
  "timing_s/gen",
  "timing_s/reward",
  "timing_s/old_log_prob",
  "timing_s/adv",
  "timing_s/update_actor",
  "timing_s/step",
  "perf/throughput",
  "perf/total_num_tokens",
  "perf/max_memory_allocated_gb",
  "perf/max_memory_reserved_gb",
  "training/global_step",
  "training/epoch",
];

Deno.test({
  name: "GRPO with a KL loss and gradient checkpointing runs two steps and logs verl's metrics",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const m = await run([
      "algorithm.adv_estimator=grpo",
      "actor_rollout_ref.actor.use_kl_loss=true",
      "trainer.test_freq=2",
      "actor_rollout_ref.model.enable_gradient_checkpointing=true",
    ]);
    assertFinite(m.get(2)!, [...COMMON, "actor/kl_loss", "timing_s/ref"]);
    const val = Object.keys(m.get(2)!).find((k) => k.startsWith("val-core/synthetic/arithmetic/"));
    assert.ok(val, "validation metric missing");
  },
});

Deno.test({
  name:
    "PPO with a critic (gae), KL in the reward, use_dynamic_bsz and a checkpointed critic runs two steps",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const m = await run([
      "algorithm.adv_estimator=gae",
      "algorithm.use_kl_in_reward=true",
      "actor_rollout_ref.rollout.n=1",
      "actor_rollout_ref.actor.ppo_mini_batch_size=4",
      "critic.ppo_mini_batch_size=4",
      // token-budget micro-batches everywhere (T = 22): actor, old log-prob, ref, critic, values
      "actor_rollout_ref.actor.use_dynamic_bsz=true",
      "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=40",
      "critic.ppo_max_token_len_per_gpu=30",
      "critic.model.enable_gradient_checkpointing=true",
    ]);
    assertFinite(m.get(2)!, [
      ...COMMON,
      "critic/values/mean",
      "critic/vf_loss",
      "critic/vf_clipfrac",
      "critic/vf_explained_var",
      "timing_s/values",
      "timing_s/update_critic",
      "actor/reward_kl_penalty",
    ]);
  },
});

Deno.test({
  name:
    "use_dynamic_bsz: a token budget below max_prompt_length + max_response_length names its key",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await assert.rejects(
      () =>
        run([
          "actor_rollout_ref.actor.use_dynamic_bsz=true",
          "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=21",
        ]),
      /actor_rollout_ref\.rollout\.log_prob_max_token_len_per_gpu=21 is below data\.max_prompt_length \+ data\.max_response_length = 22/,
    );
  },
});

Deno.test({
  name: "calculate_log_probs: the sampler's probabilities match the recomputed ones",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const m = await run([
      "algorithm.adv_estimator=grpo",
      "actor_rollout_ref.rollout.calculate_log_probs=true",
      "actor_rollout_ref.rollout.temperature=0.7",
      "trainer.val_before_train=false",
    ]);
    const s = m.get(1)!;
    assertFinite(s, [
      "training/rollout_probs_diff_max",
      "training/rollout_actor_probs_pearson_corr",
    ]);
    // Same weights, same temperature: only float rounding separates the two passes.
    assert.ok(s["training/rollout_probs_diff_max"] < 1e-3, JSON.stringify(s));
    assert.ok(s["training/rollout_actor_probs_pearson_corr"] > 0.999, JSON.stringify(s));
    assert.ok(
      !("training/rollout_probs_diff_max" in
        (await run(["trainer.val_before_train=false"])).get(1)!),
    );
  },
});

const GAE_SIZES = [
  "actor_rollout_ref.rollout.n=1",
  "actor_rollout_ref.actor.ppo_mini_batch_size=4",
  "critic.ppo_mini_batch_size=4",
];

Deno.test({
  name: "critic.model.path starts the critic from another folder's trunk",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await initGpu();
    const dir = Deno.makeTempDirSync({ prefix: "webrl_e2e_" });
    const tiny = await makeTinyRun(dir);
    const shipped = new URL("../assets/tiny_arith", import.meta.url).pathname;
    const setup = async (criticPath: string) =>
      await setupTrainer(
        loadConfig("ppo_trainer", {
          overrides: [...tiny.overrides, "algorithm.adv_estimator=gae", ...GAE_SIZES, criticPath],
        }),
        { print: () => {} },
      );
    const embed = "model.embed_tokens.weight";
    const want = (await readWeights(shipped)).tensors.get(embed)!;
    const own = (await readWeights(tiny.modelPath)).tensors.get(embed)!;
    const parts = await setup(`critic.model.path=${shipped}`);
    const got = (await parts.critic!.model.toArrays()).get(embed)!;
    assert.deepEqual(got, want);
    assert.notDeepEqual(got, own);
    const fallback = await setup(`critic.model.path=${tiny.modelPath}`);
    assert.deepEqual((await fallback.critic!.model.toArrays()).get(embed)!, own);
    await assert.rejects(
      () => setup("critic.model.path=/nonexistent/critic"),
      /critic\.model\.path/,
    );
    Deno.removeSync(dir, { recursive: true });
  },
});
