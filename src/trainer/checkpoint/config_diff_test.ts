import assert from "node:assert/strict";
import { checkResumeConfig, diffConfigs } from "./config_diff.ts";

const saved = `# Resolved ppo_trainer config.
data:
  train_batch_size: 4
actor_rollout_ref:
  model:
    path: /m
    override_config: {}
  actor:
    optim:
      lr: 0.001
  rollout:
    n: 2
trainer:
  resume_mode: auto
  logger: [console]
`;

Deno.test("a resumed config is compared key by key; shape keys refuse, others warn", () => {
  const now = saved.replace("lr: 0.001", "lr: 0.002").replace("n: 2", "n: 4")
    .replace("resume_mode: auto", "resume_mode: resume_path")
    .replace("override_config: {}", "override_config: {num_hidden_layers: 3}")
    .replace("[console]", "[console, file]");
  const changes = diffConfigs(saved, now);
  assert.deepEqual(changes.map((c) => [c.key, c.saved, c.now, c.hard !== null]), [
    ["actor_rollout_ref.actor.optim.lr", "0.001", "0.002", false],
    ["actor_rollout_ref.model.override_config", "{}", "(absent)", true],
    ["actor_rollout_ref.model.override_config.num_hidden_layers", "(absent)", "3", true],
    ["actor_rollout_ref.rollout.n", "2", "4", true],
    ["trainer.logger", '["console"]', '["console","file"]', false],
  ]);
  const lines: string[] = [];
  const print = (l: string) => lines.push(l);
  assert.throws(
    () => checkResumeConfig(changes, { where: "/c/global_step_2", allowed: [], print }),
    /trainer\.resume_allowed_changes=\[actor_rollout_ref\.model\.override_config,actor_rollout_ref\.model\.override_config\.num_hidden_layers,actor_rollout_ref\.rollout\.n\]/,
  );
  assert.equal(lines[0], "the config differs from the one saved with /c/global_step_2:");
  assert.ok(lines.includes("  warning: actor_rollout_ref.actor.optim.lr: 0.001 -> 0.002"));
  assert.ok(lines.includes("  error: actor_rollout_ref.rollout.n: 2 -> 4 (other group shapes)"));
  lines.length = 0;
  checkResumeConfig(changes, {
    where: "/c/global_step_2",
    allowed: ["actor_rollout_ref.rollout.n", "actor_rollout_ref.model.override_config"],
    print,
  });
  assert.ok(lines.includes("  allowed: actor_rollout_ref.rollout.n: 2 -> 4 (other group shapes)"));
  assert.deepEqual(diffConfigs(saved, saved), []);
});

Deno.test("a key an older checkpoint lacks counts as the schema's default", () => {
  const older = saved;
  const now = saved.replace(
    "  train_batch_size: 4\n",
    "  train_batch_size: 4\n  train_max_samples: null\n  seed: 7\n",
  );
  const defaults = "data:\n  train_max_samples: null\n  seed: 1\n";
  // train_max_samples (a hard key) at its default is no change; seed moved off its default.
  assert.deepEqual(
    diffConfigs(older, now, defaults).map((c) => [c.key, c.saved, c.now]),
    [["data.seed", "1", "7"]],
  );
  // Without the defaults both read as appearing keys.
  assert.deepEqual(diffConfigs(older, now).map((c) => c.key), [
    "data.seed",
    "data.train_max_samples",
  ]);
});
