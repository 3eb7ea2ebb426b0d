// Needs --unstable-worker-options (the worker's permission sandbox is an unstable Deno API).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { RewardManager } from "./manager.ts";
import { createRewardManager } from "./create.ts";
import { SandboxedRewardFunction } from "./sandbox.ts";

const FIXTURE = new URL("../../test/fixtures/reward/behaviours.ts", import.meta.url).pathname;

Deno.test("user code in the sandbox: refused, timed out, thrown and NaN are all counted", async () => {
  const scorer = await SandboxedRewardFunction.load(FIXTURE, {
    timeoutS: 0.4,
    rewardKwargs: { scale: 2 },
  });
  const logs: string[] = [];
  const m = new RewardManager({ scorer, log: (l) => logs.push(l), maxReports: 10 });
  const sources = ["ok", "net", "write", "hang", "ok", "hang_async", "throw", "nan", "dict", "ok"];
  const t0 = performance.now();
  const r = await m.score({
    responses: sources.map((_, i) => String(i)),
    responseMask: new Uint8Array(sources.length).fill(1),
    responseLength: 1,
    dataSources: sources,
    groundTruths: sources.map((_, i) => String(i)),
  });
  assert.ok(performance.now() - t0 < 8000, "timeouts must not stall the run");
  assert.deepEqual([...r.scores], [2, 0, 0, 0, 2, 0, 0, 0, 1, 2]);
  const kinds = Object.fromEntries(r.failures.map((f) => [f.index, f.kind]));
  assert.deepEqual(kinds, {
    1: "permission_denied",
    2: "permission_denied",
    3: "timeout",
    5: "timeout",
    6: "error",
    7: "non_finite",
  });
  assert.equal(r.metrics["reward/permission_denied"], 2);
  assert.equal(r.metrics["reward/timeouts"], 2);
  assert.equal(r.metrics["reward/errors"], 1);
  assert.equal(r.metrics["reward/non_finite"], 1);
  assert.equal(r.metrics["reward/failed"], 6);
  assert.deepEqual(r.rewardExtraInfo.acc[8], true);
  assert.ok(!existsSync("/tmp/reward_sandbox_escape.txt"));
  assert.ok(logs.some((l) => /sample 1 \(data_source=net\).*net access/.test(l)));
  assert.ok(logs.some((l) => /sample 6 .*bad ground truth/.test(l)));
  assert.equal(scorer.restarts, 2);

  // The restarted worker keeps serving batches.
  const again = await m.score({
    responses: ["x"],
    responseMask: [1],
    responseLength: 1,
    dataSources: ["ok"],
    groundTruths: ["x"],
  });
  assert.deepEqual([...again.scores], [2]);
  m.close();
});

Deno.test("a module without the named function fails to load, naming it", async () => {
  const path = new URL("../../test/fixtures/reward/no_export.js", import.meta.url).pathname;
  await assert.rejects(
    () =>
      createRewardManager({
        custom_reward_function: { path, name: "compute_score", reward_kwargs: {}, timeout_s: 1 },
      }),
    /no_export\.js \(compute_score\).*does not export a function "compute_score".*score/,
  );
});
