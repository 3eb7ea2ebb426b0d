/**
 * Robustness of a run's state on disk, each a real `deno task train` subprocess: non-finite
 * weights are never checkpointed, a corrupt latest checkpoint is refused with the way back to the
 * last good one, a second run is kept out of a folder, pruning survives a SIGKILL, and bad output
 * folders, extra state and config changes stop a run before any work.
 */
import assert from "node:assert/strict";
import { makeTinyRun } from "./tiny_run.ts";
import {
  jsonlRecords,
  lit,
  loggedSteps,
  rehash,
  type RunResult,
  train,
  tree,
} from "./crash_helpers.ts";

const T = { sanitizeResources: false, sanitizeOps: false };

/** A tiny run in a fresh folder; `run(extra, env)` trains it with save_freq=1. */
async function tiny(prefix: string) {
  const dir = Deno.makeTempDirSync({ prefix });
  const r = await makeTinyRun(dir);
  const base = [...r.overrides, "trainer.save_freq=1", "trainer.test_freq=-1"];
  return {
    dir,
    ckpt: `${dir}/ckpt`,
    metrics: `${dir}/outputs/webrl_examples/${dir.split("/").at(-1)}/metrics.jsonl`,
    run: (extra: string[], env: Record<string, string> = {}): Promise<RunResult> =>
      train(dir, [...base, ...extra], env),
    done: () => Deno.removeSync(dir, { recursive: true }),
  };
}

const ok = (r: RunResult) => assert.equal(r.code, 0, r.text);
const fails = (r: RunResult, re: RegExp) => {
  assert.notEqual(r.code, 0, r.text);
  assert.match(r.text, re);
};

Deno.test({
  ...T,
  name: "non-finite weights are never checkpointed; latest stays at the last good one",
  fn: async () => {
    const t = await tiny("webrl_nan_");
    ok(await t.run(["trainer.total_training_steps=1"]));
    // An lr beyond f32's range turns the weights into ±Infinity/NaN at step 2.
    const blown = await t.run([
      "trainer.total_training_steps=2",
      "actor_rollout_ref.actor.optim.lr=1e39",
    ]);
    fails(
      blown,
      /not saving global_step_2: actor weights: tensor model\.\S+ holds (NaN|-?Infinity) at element \d+; refusing to save non-finite state\. The checkpoints are unchanged; latest is still global_step_1/,
    );
    const names = [...Deno.readDirSync(t.ckpt)].map((e) => e.name).sort();
    assert.deepEqual(names, ["global_step_1", "latest_checkpointed_iteration.txt"]);
    assert.equal(Deno.readTextFileSync(`${t.ckpt}/latest_checkpointed_iteration.txt`), "1");
    // The good checkpoint resumes; the refused step's metrics are cut and logged again.
    const again = await t.run(["trainer.total_training_steps=2"]);
    ok(again);
    assert.match(again.text, /resumed from global_step_1/);
    assert.deepEqual(loggedSteps(jsonlRecords(t.metrics)), [1, 2]);
    t.done();
  },
});

Deno.test({
  ...T,
  name:
    "a corrupt latest checkpoint is refused, naming the file, the last good one and the override",
  fn: async () => {
    const t = await tiny("webrl_corrupt_");
    ok(await t.run(["trainer.total_training_steps=2"]));
    const weights = `${t.ckpt}/global_step_2/actor/model.safetensors`;
    const bytes = Deno.readFileSync(weights);
    bytes[bytes.length - 5] ^= 0x40;
    Deno.writeFileSync(weights, bytes);
    const good = `${Deno.realPathSync(t.ckpt)}/global_step_1`;
    const override = `trainer.resume_mode=resume_path trainer.resume_from_path=${good}`;
    const refused = await t.run(["trainer.total_training_steps=3"]);
    fails(refused, new RegExp(`${lit(weights)} SHA-256 [0-9a-f]{64} differs`));
    assert.match(refused.text, new RegExp(lit(override)));
    assert.doesNotMatch(refused.text, /^step \d/m);

    const back = await t.run(["trainer.total_training_steps=3", ...override.split(" ")]);
    ok(back);
    assert.match(back.text, /resumed from global_step_1/);
    assert.match(back.text, /latest_checkpointed_iteration\.txt now names global_step_1 \(was 2\)/);
    assert.equal(Deno.readTextFileSync(`${t.ckpt}/latest_checkpointed_iteration.txt`), "3");
    assert.notDeepEqual(Deno.readFileSync(weights), bytes, "the corrupt step 2 was replaced");
    assert.deepEqual(loggedSteps(jsonlRecords(t.metrics)), [1, 2, 3]);
    t.done();
  },
});

Deno.test({
  ...T,
  name: "a live run's lock keeps a second run out; a dead run's lock is taken over",
  fn: async () => {
    const t = await tiny("webrl_lock_");
    Deno.mkdirSync(t.ckpt);
    const host = Deno.hostname();
    const lock = (pid: number) =>
      Deno.writeTextFileSync(
        `${t.ckpt}/webrl.lock`,
        JSON.stringify({ pid, host, started: "2030-01-02T03:04:05.000Z", command: "deno x" }),
      );
    lock(Deno.pid); // this test process: alive
    const second = await t.run(["trainer.total_training_steps=1"]);
    fails(
      second,
      new RegExp(
        `in use by another run \\(pid ${Deno.pid} on host ${lit(host)}, started ` +
          `2030-01-02T03:04:05\\.000Z: deno x\\)\\..*delete ${lit(t.ckpt)}/webrl\\.lock`,
      ),
    );
    assert.match(Deno.readTextFileSync(`${t.ckpt}/webrl.lock`), new RegExp(`"pid":${Deno.pid}`));

    const gone = new Deno.Command("true").spawn();
    await gone.status;
    lock(gone.pid);
    const taken = await t.run(["trainer.total_training_steps=1"]);
    ok(taken);
    assert.match(taken.text, new RegExp(`taking over .*webrl\\.lock from pid ${gone.pid}`));
    assert.ok(!tree(t.ckpt).includes("webrl.lock"), "the lock is released at exit");
    t.done();
  },
});

Deno.test({
  ...T,
  name: "pruning keeps N actor and M critic checkpoints and survives a SIGKILL midway",
  fn: async () => {
    const t = await tiny("webrl_prune_");
    const gae = [
      "algorithm.adv_estimator=gae",
      "actor_rollout_ref.rollout.n=1",
      "actor_rollout_ref.actor.ppo_mini_batch_size=4",
      "critic.ppo_mini_batch_size=4",
      "trainer.max_actor_ckpt_to_keep=2",
      "trainer.max_critic_ckpt_to_keep=1",
    ];
    const killed = await t.run([...gae, "trainer.total_training_steps=3"], {
      WEBRL_KILL_DURING_PRUNE: "3",
    });
    assert.equal(killed.signal, "SIGKILL", killed.text);
    const left = tree(t.ckpt);
    assert.ok(left.some((n) => /(^|\/)\.deleting-/.test(n)), left.join("\n"));
    assert.ok(!left.some((n) => /^global_step_1\/actor($|\/)/.test(n)), "renamed before deleting");
    assert.equal(Deno.readTextFileSync(`${t.ckpt}/latest_checkpointed_iteration.txt`), "3");

    const resumed = await t.run([...gae, "trainer.total_training_steps=4"]);
    ok(resumed);
    assert.match(resumed.text, /removed leftovers of an interrupted run: .*\.deleting-actor-\d+/);
    assert.match(resumed.text, /warning: trainer\.total_training_steps: 3 -> 4/);
    const parts = tree(t.ckpt).filter((n) => /^global_step_\d+(\/(actor|critic))?$/.test(n));
    assert.deepEqual(parts, [
      "global_step_3",
      "global_step_3/actor",
      "global_step_4",
      "global_step_4/actor",
      "global_step_4/critic",
    ]);
    assert.ok(!tree(t.ckpt).some((n) => /\.deleting-|\.tmp-/.test(n)), tree(t.ckpt).join());
    // The pruned critic is named when someone tries to resume from that step.
    const fromPruned = await t.run([
      ...gae,
      "trainer.total_training_steps=4",
      "trainer.resume_mode=resume_path",
      `trainer.resume_from_path=${t.ckpt}/global_step_3`,
    ]);
    fails(fromPruned, /global_step_3\/critic was removed \(pruned by max_critic_ckpt_to_keep\?\)/);
    t.done();
  },
});

Deno.test({
  ...T,
  name: "unwritable output folders stop the run before any work, naming the key",
  fn: async () => {
    const t = await tiny("webrl_unwritable_");
    Deno.writeTextFileSync(`${t.dir}/blocker`, "a file, not a folder");
    const cases: [string, RegExp][] = [
      [`trainer.default_local_dir=${t.dir}/blocker/ckpt`, /trainer\.default_local_dir: cannot/],
      [`trainer.rollout_data_dir=${t.dir}/blocker/r`, /trainer\.rollout_data_dir: cannot/],
      [`trainer.validation_data_dir=${t.dir}/blocker/v`, /trainer\.validation_data_dir: cannot/],
    ];
    for (const [arg, re] of cases) {
      const r = await t.run(["trainer.total_training_steps=1", arg]);
      fails(r, re);
      assert.match(r.text, new RegExp(`${lit(t.dir)}/blocker is a file, not a folder`));
      assert.doesNotMatch(r.text, /^step \d/m);
    }
    Deno.writeTextFileSync(`${t.dir}/outputs`, "a file where the metrics folder goes");
    fails(
      await t.run(["trainer.total_training_steps=1"]),
      /trainer\.project_name\/experiment_name \(the metrics folder of trainer\.logger\): cannot/,
    );
    t.done();
  },
});

Deno.test({
  ...T,
  name: "extra_state.json and config changes are checked on resume, before any work",
  fn: async () => {
    const t = await tiny("webrl_extra_");
    ok(await t.run(["trainer.total_training_steps=1"]));
    const step1 = `${t.ckpt}/global_step_1`;
    const extraPath = `${step1}/extra_state.json`;
    const original = Deno.readTextFileSync(extraPath);
    for (const [value, found] of [['"two"', '"two"'], ["-1", "-1"]]) {
      Deno.writeTextFileSync(
        extraPath,
        original.replace('"global_step": 1', `"global_step": ${value}`),
      );
      await rehash(step1, "extra_state.json");
      const bad = await t.run(["trainer.total_training_steps=2"]);
      fails(
        bad,
        new RegExp(
          `${lit(extraPath)}: field "global_step" must be a non-negative integer, found ${found}`,
        ),
      );
      assert.match(bad.text, /start fresh with trainer\.resume_mode=disable/);
    }
    Deno.writeTextFileSync(extraPath, original.slice(0, 100));
    await rehash(step1, "extra_state.json");
    fails(await t.run(["trainer.total_training_steps=2"]), /extra_state\.json: not valid JSON/);
    Deno.writeTextFileSync(extraPath, original);
    await rehash(step1, "extra_state.json");

    const n4 = ["trainer.total_training_steps=2", "actor_rollout_ref.rollout.n=4"];
    const changed = await t.run(n4);
    fails(changed, /error: actor_rollout_ref\.rollout\.n: 2 -> 4 \(other group shapes\)/);
    assert.match(changed.text, /trainer\.resume_allowed_changes=\[actor_rollout_ref\.rollout\.n\]/);
    assert.doesNotMatch(changed.text, /^step \d/m);
    const allowed = await t.run([
      ...n4,
      "trainer.resume_allowed_changes=[actor_rollout_ref.rollout.n]",
    ]);
    ok(allowed);
    assert.match(allowed.text, /allowed: actor_rollout_ref\.rollout\.n: 2 -> 4/);
    t.done();
  },
});
