/// <reference lib="dom" />
// The tab's default run is the embedded default of `deno task train`, sized for a tab: the same
// algorithm, schedule and sampling, on prompts of the same shape; its calculator task is
// configs/tasks/calc_tool.yaml on the same rows.
import assert from "node:assert/strict";
import { loadConfig } from "../src/config/mod.ts";
import { DEFAULT_CONFIG } from "../src/cli/mod.ts";
import { parse } from "yaml";
import { readParquet, type Row } from "../src/data/mod.ts";
import { CalculatorTool } from "../src/rollout/mod.ts";
import { checkSettings, runConfig } from "./run_config.ts";
import { CALC_TOOL_SETTINGS, DEFAULT_SETTINGS } from "./settings.ts";
import { calcToolRows } from "./task.ts";

Deno.test("the tab's default settings follow configs/arithmetic_grpo.yaml", async () => {
  const cli = loadConfig("ppo_trainer", { files: [DEFAULT_CONFIG], skipPathChecks: true });
  const tab = runConfig(DEFAULT_SETTINGS, { maxPromptLength: cli.data.max_prompt_length });
  const pick = (c: typeof cli) => ({
    adv_estimator: c.algorithm.adv_estimator,
    lr: c.actor_rollout_ref.actor.optim.lr,
    n: c.actor_rollout_ref.rollout.n,
    temperature: c.actor_rollout_ref.rollout.temperature,
    steps: c.trainer.total_training_steps,
    test_freq: c.trainer.test_freq,
    train_batch_size: c.data.train_batch_size,
    max_response_length: c.data.max_response_length,
  });
  assert.deepEqual(pick(tab), pick(cli));
  // The held-out prompts of the default have as many operands as the tab's task.
  const root = new URL("..", import.meta.url).pathname;
  const rows = await readParquet(`${root}${[cli.data.val_files].flat()[0]}`);
  const prompt = JSON.stringify(rows[0].prompt);
  const operands = prompt.match(/\d+(?:[+-]\d+)+=/)![0].split(/[+-]/).length;
  assert.equal(operands, DEFAULT_SETTINGS.task.operands, prompt);
});

Deno.test("the shared validation's errors land on the form fields that set the keys", () => {
  const fields = (over: Partial<typeof DEFAULT_SETTINGS>) =>
    checkSettings({ ...DEFAULT_SETTINGS, ...over }).map((e) => [e.field, e.key]);
  assert.deepEqual(fields({}), []);
  assert.deepEqual(fields({ n: 1 }), [["n", "actor_rollout_ref.rollout.n"]]);
  assert.deepEqual(fields({ n: 1, algorithm: "gae" }), []);
  assert.deepEqual(fields({ lr: -1 }), [["lr", "actor_rollout_ref.actor.optim.lr"]]);
  assert.deepEqual(fields({ testFreq: 0 }), [["testFreq", "trainer.test_freq"]]);
  assert.deepEqual(fields({ n: 2.5 }), [["n", "actor_rollout_ref.rollout.n"]]);
  assert.deepEqual(fields({ steps: NaN, lr: NaN }), [["lr", "lr"], ["steps", "steps"]]);
  assert.deepEqual(fields({ loraRank: -1 }), [["loraRank", "actor_rollout_ref.model.lora_rank"]]);
  assert.deepEqual(fields({ loraRank: NaN }), [["loraRank", "loraRank"]]);
  const n1 = checkSettings({ ...DEFAULT_SETTINGS, n: 1 })[0].message;
  assert.match(n1, /2 or more/);
});

Deno.test("the LoRA rank field sets lora_rank (alpha 2r) on the actor and the critic", () => {
  const c = runConfig({ ...DEFAULT_SETTINGS, loraRank: 8 }, { maxPromptLength: 16 });
  assert.equal(c.actor_rollout_ref.model.lora_rank, 8);
  assert.equal(c.actor_rollout_ref.model.lora_alpha, 16);
  assert.equal(c.critic.model.lora_rank, 8);
  const full = runConfig(DEFAULT_SETTINGS, { maxPromptLength: 16 });
  assert.equal(full.actor_rollout_ref.model.lora_rank, 0);
});

Deno.test("the calculator task's settings follow configs/tasks/calc_tool.yaml", async () => {
  const root = new URL("..", import.meta.url).pathname;
  const cli = loadConfig("ppo_trainer", {
    files: [`${root}configs/tasks/calc_tool.yaml`],
    skipPathChecks: true,
  });
  const tab = runConfig(CALC_TOOL_SETTINGS, { maxPromptLength: cli.data.max_prompt_length });
  const pick = (c: typeof cli) => {
    const r = c.actor_rollout_ref.rollout, a = c.actor_rollout_ref.actor;
    return {
      adv_estimator: c.algorithm.adv_estimator,
      use_kl_in_reward: c.algorithm.use_kl_in_reward,
      lr: a.optim.lr,
      use_kl_loss: a.use_kl_loss,
      entropy_coeff: a.entropy_coeff,
      grad_clip: a.grad_clip,
      ppo_epochs: a.ppo_epochs,
      ppo_mini_batch_size: a.ppo_mini_batch_size,
      n: r.n,
      temperature: r.temperature,
      val_kwargs: r.val_kwargs,
      response_length: r.response_length,
      multi_turn: { ...r.multi_turn, tool_config_path: null },
      steps: c.trainer.total_training_steps,
      test_freq: c.trainer.test_freq,
      val_before_train: c.trainer.val_before_train,
      seed: c.trainer.seed,
      train_batch_size: c.data.train_batch_size,
      max_response_length: c.data.max_response_length,
      max_prompt_length: c.data.max_prompt_length,
    };
  };
  assert.deepEqual(pick(tab), pick(cli));
  // The tab passes the calculator in code; the YAML's tool file names the same one tool.
  const tools = parse(
    await Deno.readTextFile(`${root}${cli.actor_rollout_ref.rollout.multi_turn.tool_config_path}`),
  ) as { tools: { class_name: string; tool_schema: { function: { name: string } } }[] };
  assert.deepEqual(
    tools.tools.map((t) => [t.class_name, t.tool_schema.function.name]),
    [["calculator", CalculatorTool.defaultSchema.function.name]],
  );
  // Its rows are the CLI's: the committed data/calc_tool parquets (deno task data --task calc_tool).
  const rows = calcToolRows({ seed: CALC_TOOL_SETTINGS.seed, valPrompts: 100 });
  const train = await readParquet(`${root}${[cli.data.train_files].flat()[0]}`);
  const val = await readParquet(`${root}${[cli.data.val_files].flat()[0]}`);
  assert.equal(rows.train.length, train.length);
  const key = (r: Row) => [r.prompt, r.agent_name, r.reward_model, r.data_source, r.extra_info];
  const same = (a: Row[], b: Row[]) => assert.deepEqual(a.map(key), b.map(key));
  same(rows.train, train);
  same(rows.val, val);
  // The arithmetic task's checks (operators) do not apply to it.
  assert.deepEqual(
    checkSettings({ ...CALC_TOOL_SETTINGS, task: { ...DEFAULT_SETTINGS.task, operators: [] } }),
    [],
  );
});
