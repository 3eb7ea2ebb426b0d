/**
 * Crash safety and exact resume: a run SIGKILLed in the middle of a save, then resumed with
 * `resume_mode=auto`, ends with the same parameters and metrics as an uninterrupted run with the
 * same seed (the epoch boundary falls between the last complete checkpoint and the end), and its
 * metric files hold every step exactly once.
 */
import assert from "node:assert/strict";
import { makeTinyRun } from "./tiny_run.ts";
import {
  eventSteps,
  jsonlRecords,
  loggedSteps,
  metricsByStep,
  train,
  tree,
} from "./crash_helpers.ts";

Deno.test({
  name: "SIGKILL during a save, then resume=auto, matches an uninterrupted run exactly",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const root = Deno.makeTempDirSync({ prefix: "webrl_resume_" });
    // 8 prompts, 4 per step: one epoch = 2 steps; the run crosses an epoch boundary at step 3.
    const a = await makeTinyRun(`${root}/a`);
    const b = await makeTinyRun(`${root}/b`);
    const common = [
      "trainer.total_training_steps=4",
      "trainer.save_freq=1",
      "trainer.test_freq=-1",
      "trainer.logger=[file,tensorboard]",
    ];
    const full = await train(`${root}/a`, [...a.overrides, ...common]);
    assert.equal(full.code, 0, full.text);

    const killed = await train(`${root}/b`, [...b.overrides, ...common], {
      WEBRL_KILL_DURING_SAVE: "3",
    });
    assert.equal(killed.signal, "SIGKILL", killed.text);
    const left = [...Deno.readDirSync(`${root}/b/ckpt`)].map((e) => e.name).sort();
    assert.ok(left.includes("global_step_2") && !left.includes("global_step_3"), left.join());
    assert.ok(left.some((n) => /^global_step_3\.tmp-\d+$/.test(n)), left.join());
    assert.equal(Deno.readTextFileSync(`${root}/b/ckpt/latest_checkpointed_iteration.txt`), "2");
    // Step 3's metrics were on disk before its checkpoint was written.
    const runB = `${root}/b/outputs/webrl_examples/b`;
    assert.deepEqual(loggedSteps(jsonlRecords(`${runB}/metrics.jsonl`)), [1, 2, 3]);
    assert.deepEqual(eventSteps(`${runB}/tensorboard`, "training/global_step"), [1, 2, 3]);

    const resumed = await train(`${root}/b`, [...b.overrides, ...common]);
    assert.equal(resumed.code, 0, resumed.text);
    assert.match(resumed.text, /resumed from global_step_2/);
    assert.match(resumed.text, /taking over .*webrl\.lock from pid \d+/);
    assert.match(resumed.text, /removed leftovers of an interrupted run: .*global_step_3\.tmp-/);
    assert.match(resumed.text, /metrics\.jsonl: dropped 1 record\(s\) after step 2/);
    // Nothing half-written or stale is left, and the lock went with the process.
    assert.deepEqual(
      tree(`${root}/b/ckpt`).filter((n) => !/^global_step_[1-4]($|\/)/.test(n)),
      ["latest_checkpointed_iteration.txt"],
    );

    const wa = Deno.readFileSync(`${root}/a/ckpt/global_step_4/actor/model.safetensors`);
    const wb = Deno.readFileSync(`${root}/b/ckpt/global_step_4/actor/model.safetensors`);
    assert.ok(wa.length === wb.length && wa.every((x, i) => x === wb[i]), "final weights differ");
    const oa = Deno.readFileSync(`${root}/a/ckpt/global_step_4/actor/optimizer.safetensors`);
    const ob = Deno.readFileSync(`${root}/b/ckpt/global_step_4/actor/optimizer.safetensors`);
    assert.ok(oa.every((x, i) => x === ob[i]), "optimizer states differ");

    // Every step once in both metric files: no step lost, none doubled by the resumed run.
    const ra = jsonlRecords(`${root}/a/outputs/webrl_examples/a/metrics.jsonl`);
    const rb = jsonlRecords(`${runB}/metrics.jsonl`);
    assert.deepEqual(loggedSteps(rb), [1, 2, 3, 4]);
    assert.deepEqual(eventSteps(`${runB}/tensorboard`, "training/global_step"), [1, 2, 3, 4]);
    const ma = metricsByStep(ra), mb = metricsByStep(rb);
    for (const step of [1, 2, 3, 4]) assert.deepEqual(mb.get(step), ma.get(step), `step ${step}`);
    assert.equal(ma.get(4)!["training/epoch"], 1);
    // A save step logs its duration after the checkpoint, as a second record of the step.
    assert.ok(rb.some((r) => r.step === 4 && "timing_s/save_checkpoint" in r.data));
    Deno.removeSync(root, { recursive: true });
  },
});

Deno.test({
  name: "bad input stops with a clear message and a non-zero exit",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const root = Deno.makeTempDirSync({ prefix: "webrl_bad_" });
    const run = await makeTinyRun(`${root}/r`);
    const missing = await train(root, [
      ...run.overrides,
      `actor_rollout_ref.model.path=${root}/nope`,
    ]);
    assert.notEqual(missing.code, 0);
    assert.match(missing.text, /nope/);

    Deno.writeTextFileSync(`${run.modelPath}/model.safetensors`, "not a safetensors file");
    const corrupt = await train(root, run.overrides);
    assert.notEqual(corrupt.code, 0);
    assert.match(corrupt.text, /model\.safetensors/);

    const badResume = await train(root, [
      ...run.overrides,
      "trainer.resume_mode=resume_path",
      `trainer.resume_from_path=${root}`,
    ]);
    assert.notEqual(badResume.code, 0);
    assert.match(badResume.text, /global_step_/);

    const throwing = `${root}/reward.ts`;
    Deno.writeTextFileSync(
      throwing,
      "export function compute_score() { throw new Error('reward exploded'); }\n",
    );
    const fresh = await makeTinyRun(`${root}/t`);
    const rewardFails = await train(root, [
      ...fresh.overrides,
      `custom_reward_function.path=${throwing}`,
      "trainer.total_training_steps=1",
    ]);
    assert.notEqual(rewardFails.code, 0, rewardFails.text);
    assert.match(rewardFails.text, /reward exploded/);
    Deno.removeSync(root, { recursive: true });
  },
});
