/**
 * Crash safety and exact resume: a run SIGKILLed in the middle of a save, then resumed with
 * `resume_mode=auto`, ends with the same parameters and metrics as an uninterrupted run with the
 * same seed (the epoch boundary falls between the last complete checkpoint and the end).
 */
import assert from "node:assert/strict";
import { makeTinyRun } from "./tiny_run.ts";

const TRAIN = new URL("../src/cli/train.ts", import.meta.url).pathname;

async function train(cwd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", TRAIN, ...args],
    cwd,
    env: { ...env, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    signal: out.signal,
    text: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
  };
}

function metricsByStep(path: string): Map<number, Record<string, number>> {
  const out = new Map<number, Record<string, number>>();
  for (const line of Deno.readTextFileSync(path).trim().split("\n")) {
    const { step, data } = JSON.parse(line);
    const kept = Object.fromEntries(
      Object.entries(data as Record<string, number>).filter(([k]) =>
        !k.startsWith("timing_s/") && !k.startsWith("perf/")
      ),
    );
    out.set(step, kept); // a resumed run re-logs nothing before its checkpoint
  }
  return out;
}

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
    ];
    const full = await train(`${root}/a`, [...a.overrides, ...common]);
    assert.equal(full.code, 0, full.text);

    const killed = await train(`${root}/b`, [...b.overrides, ...common], {
      WEBRL_KILL_DURING_SAVE: "3",
    });
    assert.equal(killed.signal, "SIGKILL", killed.text);
    const left = [...Deno.readDirSync(`${root}/b/ckpt`)].map((e) => e.name).sort();
    assert.ok(left.includes("global_step_2") && !left.includes("global_step_3"), left.join());
    assert.equal(Deno.readTextFileSync(`${root}/b/ckpt/latest_checkpointed_iteration.txt`), "2");

    const resumed = await train(`${root}/b`, [...b.overrides, ...common]);
    assert.equal(resumed.code, 0, resumed.text);
    assert.match(resumed.text, /resumed from global_step_2/);

    const wa = Deno.readFileSync(`${root}/a/ckpt/global_step_4/actor/model.safetensors`);
    const wb = Deno.readFileSync(`${root}/b/ckpt/global_step_4/actor/model.safetensors`);
    assert.ok(wa.length === wb.length && wa.every((x, i) => x === wb[i]), "final weights differ");
    const oa = Deno.readFileSync(`${root}/a/ckpt/global_step_4/actor/optimizer.safetensors`);
    const ob = Deno.readFileSync(`${root}/b/ckpt/global_step_4/actor/optimizer.safetensors`);
    assert.ok(oa.every((x, i) => x === ob[i]), "optimizer states differ");

    const ma = metricsByStep(`${root}/a/outputs/webrl_examples/a/metrics.jsonl`);
    const mb = metricsByStep(`${root}/b/outputs/webrl_examples/b/metrics.jsonl`);
    for (const step of [3, 4]) assert.deepEqual(mb.get(step), ma.get(step), `step ${step}`);
    assert.equal(ma.get(4)!["training/epoch"], 1);
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
