// Needs --unstable-worker-options (deno.json turns it on). The sandbox keeps the outcomes it has,
// blames a dead or stuck worker on its sample, and keeps within a batch's time budget.
import assert from "node:assert/strict";
import { RewardManager, type RewardResult } from "./manager.ts";
import { createRewardManager } from "./create.ts";
import { SandboxedRewardFunction } from "./sandbox.ts";

const FIXTURE = new URL("../../test/fixtures/reward/lifecycle.ts", import.meta.url).pathname;

function score(m: RewardManager, sources: string[]): Promise<RewardResult> {
  return m.score({
    responses: sources.map(() => "x"),
    responseMask: new Uint8Array(sources.length).fill(1),
    responseLength: 1,
    dataSources: sources,
    groundTruths: sources.map(() => "x"),
  });
}

Deno.test("sandbox: after a timeout only the unscored samples go to the new worker", async () => {
  const scorer = await SandboxedRewardFunction.load(FIXTURE, { timeoutS: 0.3 });
  const m = new RewardManager({ scorer, log: () => {} });
  const t0 = performance.now();
  const r = await score(m, ["ok", "ok", "hang", "ok", "hang", "ok"]);
  const secs = (performance.now() - t0) / 1000;
  // Worker 1 scores samples 0 and 1 (calls 1, 2) and hangs on 2; worker 2 scores sample 3 only.
  assert.deepEqual(r.rewardExtraInfo.calls, [1, 2, null, 1, null, 1]);
  assert.deepEqual([...r.scores], [1, 1, 0, 1, 0, 1]);
  assert.deepEqual(r.failures.map((f) => [f.index, f.kind]), [[2, "timeout"], [4, "timeout"]]);
  assert.match(
    r.failures[0].message,
    /no result within 0\.3 s \(custom_reward_function\.timeout_s\)/,
  );
  assert.equal(scorer.restarts, 2);
  assert.ok(secs < 6, `took ${secs.toFixed(1)} s`);
  m.close();
});

Deno.test("sandbox: Deno.exit, close() and an uncaught error are crashes of the named sample", async () => {
  const logs: string[] = [];
  const scorer = await SandboxedRewardFunction.load(FIXTURE, { timeoutS: 5 });
  const m = new RewardManager({ scorer, log: (l) => logs.push(l), maxReports: 10 });
  const t0 = performance.now();
  const r = await score(m, ["ok", "exit", "ok", "close", "ok", "uncaught", "ok"]);
  // Reported at once, not after timeout_s.
  assert.ok(performance.now() - t0 < 4000, "a dead worker must not wait for the timeout");
  const kinds = Object.fromEntries(r.failures.map((f) => [f.index, f.kind]));
  assert.deepEqual(kinds, { 1: "crash", 3: "crash", 5: "crash" });
  assert.deepEqual([...r.scores], [1, 0, 1, 0, 1, 0, 1]);
  assert.equal(r.metrics["reward/crashes"], 3);
  assert.equal(r.metrics["reward/timeouts"], 0);
  assert.equal(r.metrics["reward/failed"], 3);
  const byIndex = (i: number) => r.failures.find((f) => f.index === i)!.message;
  assert.match(byIndex(1), /worker died: .*Deno\.exit\(3\) while scoring sample 1/);
  assert.match(byIndex(3), /close\(\) while scoring sample 3/);
  assert.match(byIndex(5), /crashed \(uncaught .*thrown from a timer\) while scoring sample 5/);
  assert.ok(logs.some((l) => /^reward crash for sample 1 \(data_source=exit\)/.test(l)));
  m.close();
});

Deno.test("sandbox: a worker that dies between batches is replaced for the next", async () => {
  const scorer = await SandboxedRewardFunction.load(FIXTURE, { timeoutS: 5 });
  const m = new RewardManager({ scorer, log: () => {} });
  for (const late of ["late_exit", "late_throw"]) {
    const first = await score(m, [late]);
    assert.deepEqual([...first.scores], [1], late);
    await new Promise((r) => setTimeout(r, 300)); // the timer ends (or breaks) the worker
    const next = await score(m, ["ok", "ok"]);
    assert.deepEqual([...next.scores], [1, 1], late);
    assert.deepEqual(next.rewardExtraInfo.calls, [1, 2], `${late}: a fresh worker`);
  }
  assert.equal(scorer.restarts, 2);
  m.close();
});

Deno.test("sandbox: batch_timeout_s bounds a batch that hangs on every sample", async () => {
  const m = await createRewardManager({
    custom_reward_function: {
      path: FIXTURE,
      name: "compute_score",
      reward_kwargs: {},
      timeout_s: 0.6,
      batch_timeout_s: 1,
    },
  }, { log: () => {} });
  const t0 = performance.now();
  const r = await score(m, ["hang", "hang", "hang", "hang", "hang", "hang"]);
  const secs = (performance.now() - t0) / 1000;
  // Without the budget: 6 x 0.6 s. With it: the first times out at 0.6 s, the second is cut at
  // 1 s, the rest are skipped. (On a loaded machine the worker's start-up can eat the budget
  // before the second sample begins: then only one times out and five are skipped.)
  assert.ok(secs < 2.5, `took ${secs.toFixed(1)} s`);
  const kinds = r.failures.map((f) => f.kind);
  const timeouts = kinds.filter((k) => k === "timeout").length;
  assert.ok(timeouts === 1 || timeouts === 2, `failures ${kinds.join(", ")}`);
  assert.deepEqual(kinds.slice(timeouts), new Array(6 - timeouts).fill("skipped"));
  assert.match(
    r.failures[timeouts - 1].message,
    /batch_timeout_s=1\) ran out|no result within 0.6 s/,
  );
  assert.match(r.failures[timeouts].message, /not scored: .*batch_timeout_s=1/);
  assert.equal(r.metrics["reward/skipped"], 6 - timeouts);
  // The next batch gets a fresh budget and a fresh worker.
  const again = await score(m, ["ok"]);
  assert.deepEqual([...again.scores], [1]);
  m.close();
});

Deno.test("a Python reward module is refused with a porting example", async () => {
  await assert.rejects(
    () => SandboxedRewardFunction.load("/somewhere/my_reward.py"),
    (e: Error) => {
      assert.match(e.message, /custom_reward_function\.path=\/somewhere\/my_reward\.py/);
      assert.match(e.message, /TypeScript\/JavaScript modules, run in a sandboxed Web Worker/);
      assert.match(e.message, /def compute_score\(data_source, solution_str, ground_truth/);
      assert.match(e.message, /export function compute_score\(dataSource, solutionStr/);
      assert.match(e.message, /my_reward\.ts/);
      return true;
    },
  );
});
