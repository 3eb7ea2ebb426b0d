// `deno task train` exits non-zero when no step was trained: here, a re-run of a finished run
// resumes from its last checkpoint and has nothing left to do.
import assert from "node:assert/strict";
import { makeTinyRun } from "./tiny_run.ts";

const TRAIN = new URL("../src/cli/train.ts", import.meta.url).pathname;

async function train(cwd: string, args: string[]) {
  const o = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", TRAIN, ...args],
    cwd,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: o.code, out: d.decode(o.stdout), err: d.decode(o.stderr) };
}

Deno.test({
  name: "train: re-running a finished run trains nothing and exits 2, naming the step and keys",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "train_exit_" });
    const tiny = await makeTinyRun(dir);
    const args = [
      ...tiny.overrides,
      "algorithm.adv_estimator=grpo",
      "trainer.total_training_steps=1",
      "trainer.save_freq=1",
      "trainer.test_freq=-1",
    ];
    const first = await train(dir, args);
    assert.equal(first.code, 0, first.out + first.err);
    assert.match(first.out, /done: 1 steps/);
    const again = await train(dir, args);
    assert.equal(again.code, 2, again.out + again.err);
    assert.match(
      again.err,
      new RegExp(
        "^train: no training step ran: the run resumed from a checkpoint at global step 1 in " +
          `trainer\\.default_local_dir=${dir}/ckpt, and trainer\\.total_training_steps=1 are ` +
          "already done",
      ),
    );
    assert.doesNotMatch(again.out, /done: /);
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test({
  name: "train: K consecutive steps with a non-finite gradient norm stop the run, naming the key",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "train_nonfinite_" });
    const tiny = await makeTinyRun(dir);
    // A learning rate this large sends the weights to ±Inf at the first update, so every later
    // gradient norm is NaN and its update is skipped.
    const run = await train(dir, [
      ...tiny.overrides,
      "algorithm.adv_estimator=grpo",
      "actor_rollout_ref.actor.optim.lr=1e30",
      "actor_rollout_ref.actor.grad_clip=1e30",
      "trainer.total_training_steps=8",
      "trainer.max_nonfinite_steps=2",
      "trainer.save_freq=-1",
      "trainer.test_freq=-1",
    ]);
    assert.notEqual(run.code, 0, run.out + run.err);
    assert.match(
      run.err,
      /training stopped at step \d: 2 consecutive steps had a NaN\/Inf gradient norm \(trainer\.max_nonfinite_steps=2; at step \d: actor\/skipped_steps=\d/,
    );
    assert.doesNotMatch(run.out, /done: /);
    await Deno.remove(dir, { recursive: true });
  },
});
