// verl's keys beyond the ones this trainer acts on: switched-off sections whose keys are inert,
// keys refused by name, keys verl derives from others, and verl's second homes of a setting.
import assert from "node:assert/strict";
import { ConfigError, loadConfig, type PpoConfig, type SchemaName } from "./mod.ts";

const load = (overrides: string[], schema: SchemaName = "ppo_trainer") =>
  loadConfig(schema, { overrides, skipPathChecks: true }) as PpoConfig;

function rejects(overrides: string[], key: string, ...parts: RegExp[]): void {
  assert.throws(() => load(overrides), (e: unknown) => {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${e}`);
    assert.equal(e.key, key);
    for (const p of parts) assert.match(e.message, p);
    return true;
  });
}

Deno.test("an inert section's keys are accepted while its switch is off; the switch is refused on", () => {
  const cfg = load([
    "algorithm.pf_ppo.weight_pow=3",
    "algorithm.pf_ppo.reweight_method=max_min",
    "actor_rollout_ref.actor.router_replay.record_file=/tmp/routes",
    "reward_model.model.path=/models/rm",
    "reward_model.rollout.tensor_model_parallel_size=8",
    "reward_model.rollout.cudagraph_capture_sizes=[1,2,4]",
    "actor_rollout_ref.rollout.prometheus.port=9100",
    "actor_rollout_ref.model.tiled_mlp.num_shards=8",
  ]);
  assert.equal(cfg.algorithm.pf_ppo.weight_pow, 3);
  assert.equal(cfg.reward_model.rollout.tensor_model_parallel_size, 8);
  rejects(["algorithm.use_pf_ppo=true"], "algorithm.use_pf_ppo", /PF-PPO's reweighting/);
  rejects(
    ["actor_rollout_ref.actor.router_replay.mode=R3"],
    "actor_rollout_ref.actor.router_replay.mode",
    /"R3" is not supported: .*no MoE router/,
    /leave it at "disabled"/,
  );
  rejects(["reward_model.enable=true"], "reward_model.enable", /model-based rewards/);
  rejects(
    ["actor_rollout_ref.rollout.prometheus.enable=true"],
    "actor_rollout_ref.rollout.prometheus.enable",
    /no metrics endpoint/,
  );
  // an inert key still has a type
  rejects(["algorithm.pf_ppo.weight_pow=high"], "algorithm.pf_ppo.weight_pow", /a number/);
});

Deno.test("a verl key refused by name says why at any value, with no did-you-mean", () => {
  for (const value of ["true", "false"]) {
    rejects(
      [`actor_rollout_ref.actor.use_fused_kernels=${value}`],
      "actor_rollout_ref.actor.use_fused_kernels",
      /is verl's, not taken: a switch of verl's PyTorch kernels/,
    );
  }
  assert.throws(
    () => load(["actor_rollout_ref.actor.sum_pi_squared_checkpointing=false"]),
    (e: unknown) => e instanceof ConfigError && !/did you mean/.test(e.message),
  );
});

Deno.test("verl's interpolations load: relative keys and oc.select with its default", () => {
  const cfg = load([
    "critic.checkpoint.load_contents=${.save_contents}",
    "critic.forward_micro_batch_size_per_gpu=${oc.select:.ppo_micro_batch_size_per_gpu,null}",
    "actor_rollout_ref.rollout.prompt_length=${oc.select:data.max_prompt_length,512}",
    "data.max_prompt_length=300",
    "trainer.log_val_generations=${oc.select:global_profiler.steps,3}",
    "critic.model.trust_remote_code=${oc.select:actor_rollout_ref.model.trust_remote_code,false}",
  ]);
  assert.deepEqual(cfg.critic.checkpoint.load_contents, cfg.critic.checkpoint.save_contents);
  assert.equal(
    cfg.critic.forward_micro_batch_size_per_gpu,
    cfg.critic.ppo_micro_batch_size_per_gpu,
  );
  assert.equal(cfg.actor_rollout_ref.rollout.prompt_length, 300); // the key exists: its value
  assert.equal(cfg.trainer.log_val_generations, 3); // no such key: the default
  // a section copied whole, as a copy
  const { model, rollout } = cfg.actor_rollout_ref;
  assert.deepEqual(rollout.mtp, model.mtp);
  assert.notEqual(rollout.mtp, model.mtp);
});

Deno.test("a key verl derives from another must hold that key's value", () => {
  const cfg = load(["actor_rollout_ref.rollout.n=4", "actor_rollout_ref.actor.rollout_n=4"]);
  assert.equal(cfg.critic.rollout_n, 4);
  rejects(
    ["actor_rollout_ref.actor.rollout_n=4"],
    "actor_rollout_ref.actor.rollout_n",
    /=4 differs from actor_rollout_ref\.rollout\.n=1: .*set actor_rollout_ref\.rollout\.n/,
  );
  rejects(
    ["actor_rollout_ref.ref.strategy=fsdp2"],
    "actor_rollout_ref.ref.strategy",
    /differs from actor_rollout_ref\.actor\.strategy="webgpu"/,
  );
  assert.equal(
    load(["actor_rollout_ref.model.use_remove_padding=true"]).actor_rollout_ref.actor
      .use_remove_padding,
    true,
  );
});

Deno.test("keys with more than one value describing this trainer accept each", () => {
  load(["trainer.use_legacy_worker_impl=enable", "critic.model.fsdp_config.strategy=fsdp2"]);
  rejects(
    ["trainer.use_legacy_worker_impl=disable"],
    "trainer.use_legacy_worker_impl",
    /new engine workers/,
    /use "auto" or "enable" or remove it/,
  );
  rejects(
    ["actor_rollout_ref.actor.optim.clip_grad=0.5"],
    "actor_rollout_ref.actor.optim.clip_grad",
    /set actor_rollout_ref\.actor\.grad_clip/,
  );
});

Deno.test("verl's second homes of a setting move onto the key the trainer reads", () => {
  const a = load(["actor_rollout_ref.model.tokenizer_path=/tok", "reward_manager.name=dapo"]);
  assert.equal(a.data.tokenizer, "/tok");
  assert.equal(a.reward_model.reward_manager, "dapo");
  const b = load(["reward_model.reward_manager=dapo"]);
  assert.equal(b.reward_manager.name, "dapo");
  rejects(
    ["actor_rollout_ref.model.tokenizer_path=/a", "data.tokenizer=/b"],
    "actor_rollout_ref.model.tokenizer_path",
    /different tokenizer folders/,
  );
  rejects(
    ["reward_model.reward_manager=dapo", "reward_manager.name=naive"],
    "reward_manager.name",
    /differ; set one/,
  );
  rejects(
    ["actor_rollout_ref.rollout.mtp.enable=true"],
    "actor_rollout_ref.rollout.mtp.enable",
    /no multi-token-prediction layers/,
  );
});

Deno.test("the SFT trainer takes verl's remaining SFT keys", () => {
  loadConfig("sft_trainer", {
    overrides: [
      "data.balance_dp_token=false",
      "data.chat_template=null",
      "data.custom_cls.name=MyData",
      "data.use_shm=false",
      "model.fsdp_config.wrap_policy.min_num_params=0",
    ],
    skipPathChecks: true,
  });
  assert.throws(
    () => loadConfig("sft_trainer", { overrides: ["data.custom_cls.path=x.py"] }),
    /no Python runs in this trainer/,
  );
});

Deno.test("a derived path follows its source through ~ expansion and a saved config's reload", async () => {
  const { configFromYaml, configToYaml, ppoTrainerSchema } = await import("./mod.ts");
  const cfg = load(["actor_rollout_ref.rollout.multi_turn.tool_config_path=~/tools.yaml"]);
  const tools = cfg.actor_rollout_ref.rollout.multi_turn.tool_config_path;
  assert.ok(tools !== null && !tools.startsWith("~"));
  assert.equal(cfg.data.tool_config_path, tools);
  const again = configFromYaml(ppoTrainerSchema, configToYaml(cfg, ppoTrainerSchema));
  assert.deepEqual(again, cfg);
});
