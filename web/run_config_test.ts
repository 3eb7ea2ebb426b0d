/// <reference lib="dom" />
// The tab's default run is the embedded default of `deno task train`, sized for a tab: the same
// algorithm, schedule and sampling, on prompts of the same shape.
import assert from "node:assert/strict";
import { loadConfig } from "../src/config/mod.ts";
import { DEFAULT_CONFIG } from "../src/cli/mod.ts";
import { readParquet } from "../src/data/mod.ts";
import { checkSettings, runConfig } from "./run_config.ts";
import { DEFAULT_SETTINGS } from "./settings.ts";

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
