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
