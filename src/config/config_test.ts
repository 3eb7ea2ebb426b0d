import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  ConfigError,
  configFromYaml,
  configToYaml,
  formatConfig,
  loadConfig,
  parseOverride,
  type PpoConfig,
  ppoTrainerSchema,
} from "./mod.ts";

const load = (overrides: string[], files: string[] = []) =>
  loadConfig("ppo_trainer", { overrides, files, skipPathChecks: true });

function rejects(fn: () => unknown, key: string, ...parts: (string | RegExp)[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${e}`);
    assert.equal(e.key, key);
    for (const p of parts) {
      if (typeof p === "string") assert.ok(e.message.includes(p), `"${e.message}" lacks "${p}"`);
      else assert.match(e.message, p);
    }
    return true;
  });
}

Deno.test("defaults load with typed values and resolved references", () => {
  const cfg: PpoConfig = load([]);
  assert.equal(cfg.data.truncation, "error");
  assert.equal(cfg.actor_rollout_ref.rollout.response_length, 512);
  assert.equal(cfg.critic.ppo_mini_batch_size, 256);
  assert.equal(cfg.critic.model.path, null);
  assert.equal(cfg.trainer.default_local_dir, "checkpoints/webrl_examples/arithmetic");
  assert.deepEqual(cfg.actor_rollout_ref.actor.optim.betas, [0.9, 0.999]);
});

Deno.test("overrides parse as YAML scalars and flow lists", () => {
  assert.deepEqual(parseOverride("a.b=16").value, 16);
  assert.deepEqual(parseOverride("a.b=1e-6").value, 1e-6);
  assert.deepEqual(parseOverride("a.b=False").value, false); // verl scripts write False
  assert.deepEqual(parseOverride("a.b=true").value, true);
  assert.deepEqual(parseOverride("a.b=null").value, null);
  assert.deepEqual(parseOverride("a.b=[console,file]").value, ["console", "file"]);
  assert.deepEqual(parseOverride("a.b=['console','file']").value, ["console", "file"]);
  assert.deepEqual(parseOverride("a.b=").value, "");
  assert.deepEqual(parseOverride("a.b=x=y").value, "x=y");
  assert.equal(parseOverride("+trainer.val_before_train=false").key, "trainer.val_before_train");
  rejects(() => parseOverride("novalue"), "novalue", "key.path=value");
  rejects(() => parseOverride("a..b=1"), "a..b", "not a dotted key");
});

Deno.test("overrides and files apply in order, references follow overrides", async () => {
  const dir = await Deno.makeTempDir();
  const a = `${dir}/a.yaml`, b = `${dir}/b.yaml`;
  await Deno.writeTextFile(a, "data:\n  max_response_length: 64\n  train_batch_size: 32\n");
  await Deno.writeTextFile(b, "data:\n  train_batch_size: 16\n");
  const cfg = load([
    "actor_rollout_ref.actor.ppo_mini_batch_size=8",
    "trainer.logger=[console,file]",
    "trainer.experiment_name=run1",
  ], [a, b]);
  assert.equal(cfg.data.train_batch_size, 16);
  assert.equal(cfg.actor_rollout_ref.rollout.response_length, 64);
  assert.equal(cfg.critic.ppo_mini_batch_size, 8);
  assert.deepEqual(cfg.trainer.logger, ["console", "file"]);
  assert.equal(cfg.trainer.default_local_dir, "checkpoints/webrl_examples/run1");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("unknown keys are rejected with a did-you-mean", () => {
  rejects(
    () => load(["data.train_batch_sise=8"]),
    "data.train_batch_sise",
    "data.train_batch_size",
  );
  rejects(
    () => load(["actor_rollout_ref.ppo_mini_batch_size=8"]),
    "actor_rollout_ref.ppo_mini_batch_size",
    'did you mean "actor_rollout_ref.actor.ppo_mini_batch_size"',
  );
  rejects(() => load(["totally.bogus=1"]), "totally.bogus", "unknown config key");
});

Deno.test("verl keys with no counterpart are refused with what to do instead", () => {
  rejects(
    () => load(["actor_rollout_ref.rollout.gpu_memory_utilization=0.6"]),
    "actor_rollout_ref.rollout.gpu_memory_utilization",
    "is verl's, not taken",
    "rollout.kv_cache_tokens",
  );
  rejects(
    () => load(["actor_rollout_ref.rollout.tensor_model_parallel_size=2"]),
    "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "distributed.backend=nats",
  );
  rejects(
    () => load(["actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=4"]),
    "actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space",
    "vLLM / SGLang",
  );
  rejects(
    () => load(["actor_rollout_ref.ref.fsdp_config.param_offload=True"]),
    "actor_rollout_ref.ref.fsdp_config.param_offload",
    "the reference policy runs on the actor's GPU",
  );
  load(["actor_rollout_ref.ref.fsdp_config.param_offload=False"]); // verl's value on one GPU
  rejects(
    () => load(["actor_rollout_ref.actor.ulysses_sequence_parallel_size=2"]),
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size",
    "one GPU per process",
  );
  for (
    const [o, key, why] of [
      ["rollout.mode=sync", "rollout.mode", "async API"],
      ["model.trust_remote_code=True", "model.trust_remote_code", "no model code is run"],
      ["rollout.agent.num_workers=8", "rollout.agent.num_workers", "agent-loop worker"],
      ["hybrid_engine=False", "hybrid_engine", "one copy of the weights"],
      ["model.use_liger=True", "model.use_liger", "fused over vocabulary chunks"],
      ["nccl_timeout=600", "nccl_timeout", "no Ray or NCCL"],
    ]
  ) rejects(() => load([`actor_rollout_ref.${o}`]), `actor_rollout_ref.${key}`, why);
  // verl's one-GPU values, as its example command lines pass them, are accepted.
  load([
    "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    "actor_rollout_ref.rollout.data_parallel_size=1",
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size=1",
    "actor_rollout_ref.ref.ulysses_sequence_parallel_size=1",
    "critic.ulysses_sequence_parallel_size=1",
    "actor_rollout_ref.rollout.mode=async",
    "actor_rollout_ref.rollout.free_cache_engine=True",
    "actor_rollout_ref.rollout.layered_summon=False",
    "actor_rollout_ref.model.trust_remote_code=False",
    "actor_rollout_ref.model.use_shm=False",
    "critic.strategy=webgpu",
  ]);
  loadConfig("generation", {
    overrides: ["rollout.tensor_model_parallel_size=1", "rollout.free_cache_engine=True"],
    skipPathChecks: true,
  });
  rejects(
    () =>
      loadConfig("generation", {
        overrides: ["rollout.tensor_model_parallel_size=2"],
        skipPathChecks: true,
      }),
    "rollout.tensor_model_parallel_size",
    "one GPU per process",
  );
});

Deno.test("unknown keys in a YAML file name the file", async () => {
  const f = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(f, "algorithm:\n  adv_estimater: grpo\n");
  rejects(() => load([], [f]), "algorithm.adv_estimater", f, "algorithm.adv_estimator");
  await Deno.writeTextFile(f, "data: [1, 2\n");
  rejects(() => load([], [f]), f, "invalid YAML");
  rejects(() => load([], ["/nonexistent/cfg.yaml"]), "/nonexistent/cfg.yaml", "cannot read");
  await Deno.remove(f);
});

Deno.test("wrong types name the key, the value and the expected type", () => {
  rejects(() => load(["data.train_batch_size=abc"]), "data.train_batch_size", "an integer", "abc");
  rejects(() => load(["data.train_batch_size=2.5"]), "data.train_batch_size", "an integer");
  rejects(
    () => load(["actor_rollout_ref.actor.use_kl_loss=yes"]),
    "actor_rollout_ref.actor.use_kl_loss",
    "boolean",
  );
  rejects(() => load(["data.truncation=both"]), "data.truncation", "error, left, right, middle");
  rejects(() => load(["trainer.logger=[console,wandb]"]), "trainer.logger", '"wandb"');
  rejects(
    () => load(["actor_rollout_ref.actor.optim.betas=[0.9]"]),
    "actor_rollout_ref.actor.optim.betas",
    "2 items",
  );
  rejects(() => load(["data.max_prompt_length=0"]), "data.max_prompt_length", "[1, inf]");
  rejects(() => load(["data.train_batch_size=null"]), "data.train_batch_size", "got null");
  rejects(() => load(["data=3"]), "data", "section");
  rejects(() => load(["trainer.seed={a: 1}"]), "trainer.seed", "expects an integer");
});

Deno.test("KL in reward and KL loss together are rejected", () => {
  rejects(
    () => load(["algorithm.use_kl_in_reward=true", "actor_rollout_ref.actor.use_kl_loss=true"]),
    "algorithm.use_kl_in_reward",
    "actor_rollout_ref.actor.use_kl_loss",
  );
});

const small = ["data.train_batch_size=8", "actor_rollout_ref.rollout.n=4"];

Deno.test("train batch not divisible by the mini-batch is rejected", () => {
  rejects(
    () => load([...small, "actor_rollout_ref.actor.ppo_mini_batch_size=3"]),
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "32 is not divisible",
    "3 * 4 = 12",
  );
  rejects(
    () => load([...small, "actor_rollout_ref.actor.ppo_mini_batch_size=16"]),
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "larger than data.train_batch_size=8",
  );
});

Deno.test("micro-batch larger than, or not dividing, the mini-batch is rejected", () => {
  const mini = "actor_rollout_ref.actor.ppo_mini_batch_size=2";
  rejects(
    () => load([...small, mini, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16"]),
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "larger than the mini-batch",
    "8 samples",
  );
  rejects(
    () => load([...small, mini, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3"]),
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "not divisible",
  );
  // n multiplies the mini-batch: 2 prompts * 4 samples = 8 samples, so a micro-batch of 8 fits.
  const ok = load([...small, mini, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8"]);
  assert.equal(ok.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu, 8);
});

Deno.test("critic batch sizes are checked only when the critic runs", () => {
  const base = [...small, "actor_rollout_ref.actor.ppo_mini_batch_size=2"];
  rejects(
    () => load([...base, "critic.ppo_micro_batch_size_per_gpu=5"]),
    "critic.ppo_micro_batch_size_per_gpu",
    "not divisible",
  );
  rejects(
    () => load([...base, "critic.ppo_mini_batch_size=3"]),
    "critic.ppo_mini_batch_size",
    "not divisible",
  );
  const grpo = load([...base, "algorithm.adv_estimator=grpo", "critic.ppo_mini_batch_size=3"]);
  assert.equal(grpo.critic.ppo_mini_batch_size, 3);
});

Deno.test("other cross-key rules", () => {
  rejects(() => load(["algorithm.adv_estimator=grpo"]), "actor_rollout_ref.rollout.n", "grpo");
  rejects(
    () => load(["actor_rollout_ref.actor.clip_ratio_c=1"]),
    "actor_rollout_ref.actor.clip_ratio_c",
  );
  rejects(() => load(["reward_model.enable=true"]), "reward_model.enable");
  rejects(() => load(["trainer.resume_mode=resume_path"]), "trainer.resume_from_path");
});

Deno.test("deprecated warmup_style is copied onto lr_scheduler_type", () => {
  const cfg = load(["actor_rollout_ref.actor.optim.warmup_style=cosine"]);
  assert.equal(cfg.actor_rollout_ref.actor.optim.lr_scheduler_type, "cosine");
});

Deno.test("missing paths are rejected, naming key and path", async () => {
  const dir = await Deno.makeTempDir();
  const train = `${dir}/train.parquet`;
  await Deno.writeTextFile(train, "x");
  const withData = (extra: string[]) =>
    loadConfig("ppo_trainer", {
      overrides: [`data.train_files=${train}`, `data.val_files=[${train}]`, ...extra],
    });
  assert.equal(withData([]).data.train_files, train);
  rejects(
    () =>
      loadConfig("ppo_trainer", {
        overrides: [`data.train_files=${dir}/absent.parquet`, `data.val_files=${train}`],
      }),
    "data.train_files",
    "absent.parquet",
    "does not exist",
  );
  rejects(
    () => withData([`data.val_files=[${train},${dir}/nope.parquet]`]),
    "data.val_files",
    "nope.parquet",
  );
  rejects(
    () => withData([`actor_rollout_ref.model.path=${dir}/model`]),
    "actor_rollout_ref.model.path",
    `${dir}/model`,
  );
  rejects(
    () => withData([`custom_reward_function.path=${dir}/r.ts`]),
    "custom_reward_function.path",
    "r.ts",
  );
  rejects(
    () => withData(["trainer.resume_mode=resume_path", `trainer.resume_from_path=${dir}/gs_3`]),
    "trainer.resume_from_path",
    "gs_3",
  );
  const skipped = loadConfig("ppo_trainer", {
    overrides: [`custom_reward_function.path=${dir}/r.ts`],
    skipPathChecks: true,
  });
  assert.equal(skipped.custom_reward_function.path, `${dir}/r.ts`);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a resolved config round-trips through YAML", () => {
  const cfg = load([
    ...small,
    "actor_rollout_ref.actor.ppo_mini_batch_size=2",
    "trainer.logger=[console,tensorboard]",
  ]);
  const back = configFromYaml(ppoTrainerSchema, configToYaml(cfg, ppoTrainerSchema));
  assert.deepEqual(back, cfg);
  assert.deepEqual(parse(formatConfig(cfg)), cfg);
});

Deno.test("generation and sft schemas load and check their own rules", () => {
  const gen = loadConfig("generation", { overrides: ["data.n_samples=4"], skipPathChecks: true });
  assert.equal(gen.data.n_samples, 4);
  rejects(
    () =>
      loadConfig("generation", {
        overrides: ["data.n_samples=4", "rollout.do_sample=false"],
        skipPathChecks: true,
      }),
    "data.n_samples",
  );
  const sft = loadConfig("sft_trainer", { overrides: ["optim.lr=2e-5"], skipPathChecks: true });
  assert.equal(sft.optim.lr, 2e-5);
  rejects(
    () =>
      loadConfig("sft_trainer", {
        overrides: ["data.micro_batch_size_per_gpu=512"],
        skipPathChecks: true,
      }),
    "data.micro_batch_size_per_gpu",
    "larger",
  );
  rejects(
    () =>
      loadConfig("sft_trainer", {
        overrides: ["data.micro_batch_size_per_gpu=3"],
        skipPathChecks: true,
      }),
    "data.micro_batch_size_per_gpu",
    "not divisible",
  );
  rejects(() => loadConfig("nope" as "generation"), "nope", "ppo_trainer");
});

Deno.test("an override may reach into a mapping-valued key, as Hydra's +a.b.c=v does", () => {
  const cfg = load([
    "+data.apply_chat_template_kwargs.enable_thinking=False",
    "custom_reward_function.reward_kwargs.scale=2",
    "+custom_reward_function.reward_kwargs.nested.list=[1,2]",
  ]);
  assert.deepEqual(cfg.data.apply_chat_template_kwargs, { enable_thinking: false });
  assert.deepEqual(cfg.custom_reward_function.reward_kwargs, {
    scale: 2,
    nested: { list: [1, 2] },
  });
  rejects(() => load(["trainer.seed.x=3"]), "trainer.seed.x", "unknown config key");
  rejects(
    () => load(["actor_rollout_ref.model.override_config.attention_dropout=0.0"]),
    "actor_rollout_ref.model.override_config",
    "edit the model folder's config.json",
  );
});

Deno.test("verl's engine and backend names: one-GPU fsdp accepted, the rest refused with why", () => {
  load(["actor_rollout_ref.rollout.name=webgpu", "actor_rollout_ref.actor.strategy=webgpu"]);
  load(["actor_rollout_ref.actor.strategy=fsdp", "critic.strategy=fsdp2"]); // one GPU: the same
  rejects(
    () => load(["actor_rollout_ref.rollout.name=vllm"]),
    "actor_rollout_ref.rollout.name",
    "built-in WebGPU engine",
  );
  for (const key of ["actor_rollout_ref.actor.strategy", "critic.strategy"]) {
    rejects(() => load([`${key}=megatron`]), key, "Megatron backend");
  }
  load([
    "actor_rollout_ref.actor.optim.optimizer=AdamW",
    "critic.optim.optimizer_impl=torch.optim",
  ]);
  rejects(
    () => load(["actor_rollout_ref.actor.optim.optimizer_impl=torchao.optim"]),
    "actor_rollout_ref.actor.optim.optimizer_impl",
    "built-in WGSL AdamW",
  );
});

Deno.test("data.return_raw_chat: true (verl's default) is accepted, false refused with the reason", () => {
  assert.equal(load([]).data.return_raw_chat, true);
  assert.equal(load(["data.return_raw_chat=True"]).data.return_raw_chat, true);
  rejects(() => load(["data.return_raw_chat=False"]), "data.return_raw_chat", "always stay");
});

Deno.test("data.seed: null (verl's default) is accepted; the trainer then shuffles with trainer.seed", () => {
  assert.equal(load(["data.seed=null"]).data.seed, null);
  assert.equal(load([]).data.seed, 1);
});

Deno.test("verl's deprecated global micro-batch keys set the per-GPU ones (one GPU)", () => {
  const cfg = load([
    "data.train_batch_size=64",
    "actor_rollout_ref.actor.ppo_mini_batch_size=64",
    "actor_rollout_ref.actor.ppo_micro_batch_size=16",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size=32",
    "actor_rollout_ref.ref.log_prob_micro_batch_size=8",
    "critic.ppo_micro_batch_size=4",
  ]);
  assert.equal(cfg.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu, 16);
  assert.equal(cfg.actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu, 32);
  assert.equal(cfg.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu, 8);
  assert.equal(cfg.critic.ppo_micro_batch_size_per_gpu, 4);
  // A per-GPU key that defaults to another follows it: the critic's to the actor's, the
  // reference's to the rollout's.
  const one = load([
    "actor_rollout_ref.actor.ppo_micro_batch_size=4",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size=12",
  ]);
  assert.equal(one.critic.ppo_micro_batch_size_per_gpu, 4);
  assert.equal(one.critic.forward_micro_batch_size_per_gpu, 4);
  assert.equal(one.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu, 12);
  rejects(
    () =>
      load([
        "actor_rollout_ref.actor.ppo_micro_batch_size=16",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
      ]),
    "actor_rollout_ref.actor.ppo_micro_batch_size",
    "are both set",
  );
});

Deno.test("verl's SFT spellings: null dict keys, micro_batch_size, lr_warmup_steps_ratio", () => {
  const sft = (o: string[]) => loadConfig("sft_trainer", { overrides: o, skipPathChecks: true });
  const c = sft([
    "data.prompt_dict_keys=null",
    "data.response_dict_keys=null",
    "data.train_batch_size=16",
    "data.micro_batch_size=8",
    "optim.lr_warmup_steps_ratio=0.05",
  ]);
  assert.equal(c.data.prompt_dict_keys, null);
  assert.equal(c.data.micro_batch_size_per_gpu, 8);
  assert.equal(c.optim.warmup_steps_ratio, 0.05);
  assert.throws(
    () => sft(["data.micro_batch_size=8", "data.micro_batch_size_per_gpu=2"]),
    /data.micro_batch_size=8 and data.micro_batch_size_per_gpu=2 are both set/,
  );
  // verl's SFT keys of resume; trainer.resume_path (its older spelling) is not ours, as in PPO.
  assert.equal(sft([]).trainer.resume_mode, "auto");
  assert.throws(
    () => sft(["trainer.resume_mode=resume_path"]),
    /trainer\.resume_mode=resume_path needs trainer\.resume_from_path/,
  );
  assert.throws(
    () => sft(["trainer.resume_path=/x"]),
    /trainer\.resume_path.*set trainer\.resume_mode=resume_path and\s+trainer\.resume_from_path/,
  );
  assert.deepEqual(
    sft(["+data.apply_chat_template_kwargs.enable_thinking=False"]).data.apply_chat_template_kwargs,
    { enable_thinking: false },
  );
});
