// Keys and checks added for robustness: temperature 0 is greedy, reward modules and their time
// limits, the evaluator's failure ratio, and the model's context window.
import assert from "node:assert/strict";
import { checkContextLength, ConfigError, loadConfig, type SchemaName } from "./mod.ts";

const load = <N extends SchemaName>(name: N, overrides: string[]) =>
  loadConfig(name, { overrides, skipPathChecks: true });

function rejects(fn: () => unknown, key: string, ...parts: RegExp[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${e}`);
    assert.equal(e.key, key);
    for (const p of parts) assert.match(e.message, p);
    return true;
  });
}

Deno.test("temperature=0 is accepted everywhere (greedy)", () => {
  const cfg = load("ppo_trainer", [
    "actor_rollout_ref.rollout.temperature=0",
    "actor_rollout_ref.rollout.val_kwargs.temperature=0",
    "actor_rollout_ref.rollout.val_kwargs.do_sample=true",
  ]);
  assert.equal(cfg.actor_rollout_ref.rollout.temperature, 0);
  assert.equal(cfg.actor_rollout_ref.rollout.val_kwargs.do_sample, true);
  assert.equal(load("generation", ["rollout.temperature=0"]).rollout.temperature, 0);
  rejects(() => load("generation", ["rollout.temperature=-0.5"]), "rollout.temperature");
});

Deno.test("a .py reward module is refused by the trainer and evaluator configs", () => {
  for (const name of ["ppo_trainer", "evaluation"] as const) {
    rejects(
      () => load(name, ["custom_reward_function.path=/work/verl/my_reward.py"]),
      "custom_reward_function.path",
      /custom_reward_function\.path=\/work\/verl\/my_reward\.py: reward functions are TypeScript/,
      /def compute_score\(data_source, solution_str, ground_truth, extra_info=None\)/,
      /\n {2}export function compute_score\(dataSource, solutionStr, groundTruth, extraInfo\) \{\n/,
      /my_reward\.ts/,
    );
  }
});

Deno.test("reward time limits: batch_timeout_s is documented, null by default, > 0 when set", () => {
  const cfg = load("ppo_trainer", []);
  assert.equal(cfg.custom_reward_function.batch_timeout_s, null);
  assert.equal(
    load("evaluation", ["custom_reward_function.batch_timeout_s=30"]).custom_reward_function
      .batch_timeout_s,
    30,
  );
  rejects(
    () => load("ppo_trainer", ["custom_reward_function.batch_timeout_s=0"]),
    "custom_reward_function.batch_timeout_s",
    /batch_timeout_s=0: no sample would be scored/,
  );
  rejects(
    () => load("evaluation", ["custom_reward_function.timeout_s=0"]),
    "custom_reward_function.timeout_s",
    /timeout_s=0: every sample would time out/,
  );
});

Deno.test("evaluation: data.max_failed_ratio defaults to 0.5 and lies in [0, 1]", () => {
  assert.equal(load("evaluation", []).data.max_failed_ratio, 0.5);
  assert.equal(load("evaluation", ["data.max_failed_ratio=0"]).data.max_failed_ratio, 0);
  rejects(() => load("evaluation", ["data.max_failed_ratio=1.5"]), "data.max_failed_ratio");
});

Deno.test("checkContextLength names the prompt and response budgets and the model's limit", () => {
  const model = "/models/tiny/config.json";
  checkContextLength({
    maxPromptLength: 16,
    maxResponseLength: 48,
    maxPositionEmbeddings: 64,
    model,
  });
  rejects(
    () =>
      checkContextLength({
        maxPromptLength: 512,
        maxResponseLength: 512,
        maxPositionEmbeddings: 64,
        model,
      }),
    "data.max_prompt_length",
    /data\.max_prompt_length=512 \+ data\.max_response_length=512 = 1024 tokens/,
    /max_position_embeddings=64 \(\/models\/tiny\/config\.json\): lower data\.max_prompt_length and data\.max_response_length/,
  );
  rejects(
    () =>
      checkContextLength({
        maxPromptLength: 40,
        maxResponseLength: 30,
        maxPositionEmbeddings: 64,
        model,
        responseKey: "rollout.response_length",
        promptLabel: "the longest prompt (40 tokens)",
      }),
    "rollout.response_length",
    /^the longest prompt \(40 tokens\) \+ rollout\.response_length=30 = 70 tokens/,
    /: set rollout\.response_length=24 or less \(or lower data\.max_prompt_length\), or use/,
  );
});
