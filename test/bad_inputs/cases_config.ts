/**
 * Bad configs: typos, wrong types, values out of range, keys that contradict each other, and,
 * systematically, every enum key of the PPO schema given a name nothing registers and every
 * bounded numeric key given a value outside its bounds.
 */
import { ppoTrainerSchema } from "../../src/config/mod.ts";
import { type BadInput, lit } from "./harness.ts";

const train = (
  name: string,
  overrides: string[],
  expect: RegExp,
  extra: Partial<BadInput> = {},
): BadInput => ({
  name,
  task: "train",
  args: (c) => [...c.run, `trainer.default_local_dir=${c.dir}/ckpt`, ...overrides],
  expect: () => expect,
  ...extra,
});

export const CONFIG_CASES: BadInput[] = [
  train(
    "typo in a key",
    ["data.train_batch_sizee=4"],
    /"data\.train_batch_sizee".*did you mean "data\.train_batch_size"/,
  ),
  train(
    "typo in a section",
    ["actor_rollout_ref.actorr.ppo_epochs=2"],
    /actor_rollout_ref\.actorr/,
  ),
  train("unknown top-level section", ["trainerr.seed=1"], /trainerr/),
  train("text for an integer", ["data.train_batch_size=abc"], /data\.train_batch_size/),
  train("fraction for an integer", ["data.train_batch_size=2.5"], /data\.train_batch_size/),
  train(
    "negative learning rate",
    ["actor_rollout_ref.actor.optim.lr=-1"],
    /actor_rollout_ref\.actor\.optim\.lr/,
  ),
  train("word for a boolean", ["data.shuffle=maybe"], /data\.shuffle/),
  train("list for a number", ["algorithm.gamma=[1,2]"], /algorithm\.gamma/),
  train("mapping for a string", ["trainer.project_name={a: 1}"], /trainer\.project_name/),
  train("unknown estimator", ["algorithm.adv_estimator=ppo"], /algorithm\.adv_estimator.*grpo/),
  train("unknown KL estimator", ["algorithm.kl_penalty=k4"], /algorithm\.kl_penalty.*low_var_kl/),
  train(
    "unknown loss aggregation",
    ["actor_rollout_ref.actor.loss_agg_mode=mean"],
    /loss_agg_mode.*token-mean/,
  ),
  train(
    "unknown policy loss",
    ["actor_rollout_ref.actor.policy_loss.loss_mode=ppo2"],
    /policy_loss\.loss_mode.*vanilla/,
  ),
  train("unknown logger", ["trainer.logger=[console,wandb]"], /trainer\.logger.*wandb/),
  train(
    "prompt + response past the model's context window",
    ["data.max_response_length=200"],
    /data\.max_response_length=200 = \d+ tokens is more than the model's max_position_embeddings=64 \(.*config\.json\)/,
  ),
  train("KL in reward and in loss", [
    "algorithm.use_kl_in_reward=true",
    "actor_rollout_ref.actor.use_kl_loss=true",
  ], /use_kl_in_reward.*use_kl_loss/),
  train(
    "bypass mode without the rollout's log-probs",
    ["algorithm.rollout_correction.bypass_mode=true"],
    /algorithm\.rollout_correction\.bypass_mode=true .*actor_rollout_ref\.rollout\.calculate_log_probs=true/,
  ),
  train(
    "mini-batch does not divide the batch",
    ["actor_rollout_ref.actor.ppo_mini_batch_size=3"],
    /actor_rollout_ref\.actor\.ppo_mini_batch_size/,
  ),
  train(
    "mini-batch larger than the batch",
    ["actor_rollout_ref.actor.ppo_mini_batch_size=8"],
    /ppo_mini_batch_size=8 is larger than data\.train_batch_size=4/,
  ),
  train("micro-batch larger than the mini-batch", [
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16",
  ], /ppo_micro_batch_size_per_gpu=16/),
  train("micro-batch does not divide the mini-batch", [
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3",
  ], /ppo_micro_batch_size_per_gpu=3/),
  train("critic mini-batch does not divide", [
    "algorithm.adv_estimator=gae",
    "critic.ppo_mini_batch_size=3",
  ], /critic\.ppo_mini_batch_size/),
  train("group estimator with one sample", [
    "algorithm.adv_estimator=grpo",
    "actor_rollout_ref.rollout.n=1",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
  ], /actor_rollout_ref\.rollout\.n/),
  train(
    "rloo with one sample",
    [
      "algorithm.adv_estimator=rloo",
      "actor_rollout_ref.rollout.n=1",
      "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
    ],
    /rloo.*rollout\.n/,
  ),
  train(
    "gae with the critic disabled",
    ["algorithm.adv_estimator=gae", "critic.enable=false"],
    /critic\.enable/,
  ),
  train("dual-clip bound not above 1", ["actor_rollout_ref.actor.clip_ratio_c=1"], /clip_ratio_c/),
  train("model-based reward", ["reward_model.enable=true"], /reward_model\.enable/),
  train(
    "resume_path without a path",
    ["trainer.resume_mode=resume_path"],
    /trainer\.resume_from_path/,
  ),
  train("resume path that does not exist", [
    "trainer.resume_mode=resume_path",
    "trainer.resume_from_path=/nonexistent/global_step_3",
  ], /\/nonexistent\/global_step_3/),
  train("two machines", ["trainer.nnodes=2"], /trainer\.nnodes/),
  train("two GPUs", ["trainer.n_gpus_per_node=2"], /trainer\.n_gpus_per_node/),
  train(
    "zero samples per prompt",
    ["actor_rollout_ref.rollout.n=0"],
    /actor_rollout_ref\.rollout\.n/,
  ),
  train("zero training steps", ["trainer.total_training_steps=0"], /trainer\.total_training_steps/),
  train("zero response length", ["data.max_response_length=0"], /data\.max_response_length/),
  train(
    "top_p above one",
    ["actor_rollout_ref.rollout.top_p=1.5"],
    /actor_rollout_ref\.rollout\.top_p/,
  ),
  train(
    "missing train file",
    ["data.train_files=/nonexistent/train.parquet"],
    /data\.train_files.*\/nonexistent\/train\.parquet/,
  ),
  train("missing val file", ["data.val_files=/nonexistent/val.parquet"], /data\.val_files/),
  train(
    "missing model folder",
    ["actor_rollout_ref.model.path=/nonexistent/model"],
    /actor_rollout_ref\.model\.path.*\/nonexistent\/model/,
  ),
  train(
    "missing reward module",
    ["custom_reward_function.path=/nonexistent/reward.ts"],
    /custom_reward_function\.path/,
  ),
  train("override without a value", ["data.train_batch_size"], /data\.train_batch_size/),
  train("a value for a whole section", ["data=3"], /"data" is a section/),
  train("unclosed list in an override", ["trainer.logger=[console"], /trainer\.logger/),
  {
    name: "missing config file",
    task: "train",
    args: (c) => [`${c.dir}/nope.yaml`],
    expect: (c) => new RegExp(lit(`${c.dir}/nope.yaml`)),
  },
  {
    name: "config file that is not YAML",
    task: "train",
    setup: (c) => Deno.writeTextFileSync(`${c.dir}/bad.yaml`, "data: [1, 2\ntrainer: {"),
    args: (c) => [`${c.dir}/bad.yaml`],
    expect: (c) => new RegExp(`invalid YAML in ${lit(c.dir)}/bad\\.yaml`),
  },
  {
    name: "config file that is a list",
    task: "train",
    setup: (c) => Deno.writeTextFileSync(`${c.dir}/list.yaml`, "- a\n- b\n"),
    args: (c) => [`${c.dir}/list.yaml`],
    expect: () => /list\.yaml is not a mapping/,
  },
  {
    name: "unknown key inside a config file",
    task: "train",
    setup: (c) => Deno.writeTextFileSync(`${c.dir}/typo.yaml`, "algorithm:\n  gama: 0.9\n"),
    args: (c) => [`${c.dir}/typo.yaml`],
    expect: () => /algorithm\.gama.*typo\.yaml.*algorithm\.gamma/s,
  },
  {
    name: "wrong type inside a config file",
    task: "train",
    setup: (c) => Deno.writeTextFileSync(`${c.dir}/t.yaml`, "trainer:\n  save_freq: often\n"),
    args: (c) => [`${c.dir}/t.yaml`],
    expect: () => /trainer\.save_freq/,
  },
];

interface FieldLike {
  spec: { kind: string; min?: number; max?: number; choices?: unknown; item?: string };
}
type Node = FieldLike | { fields: Record<string, Node> };

function walk(node: Node, prefix: string, out: [string, FieldLike][]): void {
  if ("fields" in node) {
    for (const [k, v] of Object.entries(node.fields)) walk(v, prefix ? `${prefix}.${k}` : k, out);
  } else out.push([prefix, node]);
}

/** One case per enum key (a name nothing registers) and per bounded number (just outside). */
export function schemaCases(): BadInput[] {
  const fields: [string, FieldLike][] = [];
  walk(ppoTrainerSchema.root as unknown as Node, "", fields);
  const out: BadInput[] = [];
  const keyRe = (key: string) => new RegExp(lit(key));
  for (const [key, f] of fields) {
    const s = f.spec;
    if (s.kind === "enum") {
      out.push(train(`${key} names nothing registered`, [`${key}=no_such_name`], keyRe(key)));
    } else if ((s.kind === "int" || s.kind === "float") && s.min !== undefined) {
      const below = s.kind === "int" ? s.min - 1 : s.min - 0.5;
      out.push(train(`${key} below its minimum`, [`${key}=${below}`], keyRe(key)));
    } else if ((s.kind === "int" || s.kind === "float") && s.max !== undefined) {
      out.push(train(`${key} above its maximum`, [`${key}=${s.max + 1}`], keyRe(key)));
    } else if (s.kind === "bool") {
      out.push(train(`${key} given a number`, [`${key}=7`], keyRe(key)));
    }
  }
  return out;
}
