/**
 * A distributed run end to end against a real nats-server on loopback: the trainer with
 * distributed.backend=nats and two workers (one over TCP, one over WebSocket) for a few steps,
 * on-policy and one step off-policy; and an untrusted worker whose forged trajectories are
 * rejected and counted against it.
 */
import assert from "node:assert/strict";
import { jetstream } from "@nats-io/jetstream";
import { initGpu } from "../src/gpu/mod.ts";
import {
  connectNats,
  decodeJob,
  encodeTrajectory,
  natsTestsEnabled,
  runNames,
  runWorker,
  withNatsServer,
} from "../src/distributed/mod.ts";
import { fit } from "../src/trainer/mod.ts";
import type { Logger } from "../src/tracking/mod.ts";
import { tinyNatsTrainer } from "./tiny_run.ts";

const enabled = await natsTestsEnabled();

async function distributedRun(
  prefix: string,
  extra: string[],
  workers: (url: string, wsUrl: string, seed: string, signal: AbortSignal) => Promise<unknown>[],
): Promise<Map<number, Record<string, number>>> {
  await initGpu();
  const logged = new Map<number, Record<string, number>>();
  await withNatsServer(prefix, async (s) => {
    const { parts, dir } = await tinyNatsTrainer(s, prefix, [
      "distributed.step_timeout_s=120",
      ...extra,
    ]);
    parts.tracking = {
      log: (k, m) => logged.set(k, { ...logged.get(k), ...m }),
      close() {},
    } as Logger;
    const stop = new AbortController();
    const running = workers(s.url, s.wsUrl!, s.workerSeed, stop.signal);
    let res;
    try {
      res = await fit(parts);
    } finally {
      stop.abort();
      await Promise.allSettled(running);
      await parts.remote!.close();
    }
    assert.equal(res.globalStep, 3);
    Deno.removeSync(dir, { recursive: true });
  });
  return logged;
}

function honest(prefix: string, useWs = true) {
  return (url: string, wsUrl: string, seed: string, signal: AbortSignal) =>
    [[url, "tcp"], ...(useWs ? [[wsUrl, "ws"]] : [])].map(async ([u, id]) => {
      const nc = await connectNats(u, { nkeySeed: seed });
      await runWorker(nc, { prefix, workerId: id, signal });
      await nc.close();
    });
}

/**
 * A worker that answers its jobs with made-up tokens and log-probs, and with made-up scores
 * unless `scores` is false (then the trainer scores its responses itself, and only the log-probs
 * can give it away).
 */
function forger(prefix: string, o: { scores: boolean }) {
  return async (url: string, seed: string, signal: AbortSignal) => {
    const nc = await connectNats(url, { nkeySeed: seed });
    const js = jetstream(nc);
    const n = runNames(prefix);
    const c = await js.consumers.get(n.jobStream, n.consumer);
    while (!signal.aborted) {
      const m = await c.next({ expires: 1000 });
      if (!m) continue;
      const job = await decodeJob(m.data);
      const R = job.responseLength;
      await js.publish(
        n.traj,
        await encodeTrajectory({
          jobId: job.jobId,
          epoch: job.epoch,
          step: job.step,
          version: job.version,
          workerId: "forger",
          n: job.n,
          responseLength: R,
          responses: new Int32Array(job.n * R).fill(5),
          responseMask: new Int32Array(job.n * R).fill(1),
          logProbs: new Float32Array(job.n * R).fill(-0.01),
          scores: o.scores ? Array(job.n).fill(1) : null,
          genSeconds: 0,
          deliveries: 1,
        }),
      );
      await m.ackAck();
    }
    await nc.close();
  };
}

if (enabled) {
  for (const staleness of [0, 1]) {
    Deno.test({
      name: `distributed: trainer + 2 workers, max_staleness=${staleness}, 3 steps`,
      sanitizeOps: false,
      sanitizeResources: false,
      fn: async () => {
        const prefix = `webrl.e2e.s${staleness}`;
        const logged = await distributedRun(
          prefix,
          [
            `distributed.max_staleness=${staleness}`,
            "algorithm.rollout_correction.rollout_is=token",
          ],
          honest(prefix),
        );
        for (let step = 1; step <= 3; step++) {
          const m = logged.get(step)!;
          assert.equal(m["distributed/jobs"], 4, `step ${step}`);
          assert.equal(m["distributed/rejected_groups"], 0, `step ${step}`);
          assert.equal(m["distributed/staleness/max"], step === 1 ? 0 : staleness);
          assert.ok(
            m["distributed/logprob_diff/max"] < 0.1,
            `${m["distributed/logprob_diff/max"]}`,
          );
          assert.ok(Number.isFinite(m["actor/pg_loss"]));
          assert.ok(m["rollout_corr/rollout_is_mean"] > 0.5);
        }
        // Off-policy: step k+1's jobs were out before step k's update, so they were in flight.
        if (staleness === 1) assert.ok(logged.get(3)!["distributed/in_flight_before_wait_s"] > 0);
      },
    });
  }

  Deno.test({
    name: "distributed: an untrusted worker's forged trajectories are rejected and counted",
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      const prefix = "webrl.e2e.forged";
      const logged = await distributedRun(prefix, [], (url, _ws, seed, signal) => [
        forger(prefix, { scores: true })(url, seed, signal),
        ...honest(prefix, false)(url, url, seed, signal),
      ]);
      let rejected = 0, forged = 0;
      for (const m of logged.values()) {
        rejected += m["distributed/rejected_groups"] ?? 0;
        forged += m["distributed/rejected/forger"] ?? 0;
        assert.equal(m["distributed/rejected/tcp"] ?? 0, 0);
      }
      assert.ok(forged > 0, "the forger took no job");
      assert.equal(rejected, forged);
    },
  });
}

if (enabled) {
  Deno.test({
    name: "distributed: a step whose every job a forger answered is skipped, not fatal",
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      const prefix = "webrl.e2e.allforged";
      // The forger is the only worker: every group of every step is rejected.
      const logged = await distributedRun(prefix, [], (url, _ws, seed, signal) => [
        forger(prefix, { scores: true })(url, seed, signal),
      ]);
      let steps = 0;
      for (const [step, m] of logged) {
        if (!("timing_s/step" in m)) continue; // validation records
        steps++;
        assert.equal(m["distributed/empty_steps"], 1, `step ${step}`);
        assert.ok(m["distributed/rejected_groups"] > 0, `step ${step}`);
        assert.equal(m["distributed/rejected/forger"], m["distributed/rejected_groups"]);
        assert.ok(!("actor/pg_loss" in m), `step ${step}: no update ran`);
      }
      assert.equal(steps, 3);
    },
  });
}

if (enabled) {
  Deno.test({
    name: "distributed, bypass mode: forged log-probs are caught inside the update and counted",
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      const prefix = "webrl.e2e.bypass";
      const RC = "algorithm.rollout_correction";
      const logged = await distributedRun(
        prefix,
        [`${RC}.bypass_mode=true`, "actor_rollout_ref.rollout.calculate_log_probs=true"],
        (url, _ws, seed, signal) => [
          forger(prefix, { scores: false })(url, seed, signal),
          ...honest(prefix, false)(url, url, seed, signal),
        ],
      );
      let rejected = 0, forged = 0;
      for (const [step, m] of logged) {
        if (!("timing_s/step" in m)) continue; // validation records
        assert.ok(!("timing_s/old_log_prob" in m), `step ${step}: no old_log_prob pass`);
        rejected += m["distributed/rejected_groups"];
        forged += m["distributed/rejected/forger"] ?? 0;
        assert.equal(m["distributed/rejected/tcp"] ?? 0, 0);
        assert.ok(m["distributed/logprob_diff/mean"] >= 0, `step ${step}: diffs were measured`);
        assert.ok(Number.isFinite(m["actor/pg_loss"]));
      }
      // with its scores left to the trainer, only the update's log-prob check can reject it
      assert.ok(forged > 0, "the forger took no job");
      assert.equal(rejected, forged);
    },
  });
}
