/**
 * Faults against a real nats-server: workers killed at random (SIGKILL, real processes) lose or
 * double-count nothing; a slow worker's job goes to another after the ack wait; a late worker
 * starts from the weights its job names; a restarted trainer drops the jobs and answers of the
 * old one; a worker with the wrong key is refused and a worker cannot touch the run's streams.
 */
import assert from "node:assert/strict";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { gpuTest } from "../testing/mod.ts";
import { connectNats } from "./connect.ts";
import { Coordinator, type JobSpec } from "./coordinator.ts";
import { encodeTrajectory, runNames } from "./protocol.ts";
import { natsTestsEnabled, tinyModel, withServer } from "./test_server.ts";
import { runWorker } from "./worker.ts";
import { ARITHMETIC_DATA_SOURCE } from "../reward/mod.ts";
import { createUser } from "@nats-io/nkeys";

const enabled = await natsTestsEnabled();
const WORKER_CLI = new URL("../cli/worker.ts", import.meta.url).pathname;

function jobs(step: number, count: number, o: { n?: number; R?: number } = {}): JobSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    jobId: `s${step}-${i}`,
    promptIds: [1, 2, 3, 4 + (i % 5)],
    n: o.n ?? 2,
    responseLength: o.R ?? 6,
    sampling: { temperature: 1, topK: 0, topP: 1, doSample: true },
    seed: 100 * step + i,
    dataSource: ARITHMETIC_DATA_SOURCE,
    groundTruth: "7",
    extraInfo: {},
  }));
}

async function openRun(url: string, seed: string, prefix: string, jobTimeoutS: number) {
  const tiny = await tinyModel();
  const nc = await connectNats(url, { nkeySeed: seed });
  const coord = await Coordinator.open(nc, {
    prefix,
    jobTimeoutS,
    stepTimeoutS: 90,
    maxDeliver: 20,
    keepVersions: 2,
  });
  await coord.publishRunInfo({ tokenizerFiles: tiny.tokenizerFiles, eosTokenIds: [], reward: {} });
  return { coord, tiny };
}

if (enabled) {
  Deno.test({
    name: "distributed: workers killed at random lose and double-count no trajectory",
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      const prefix = "webrl.test.kill";
      await withServer(prefix, async (s) => {
        const { coord, tiny } = await openRun(s.url, s.trainerSeed, prefix, 1.5);
        await coord.publishWeights(0, tiny.modelConfig, tiny.tensors);
        const spawn = (k: number) =>
          new Deno.Command(Deno.execPath(), {
            args: ["run", "-A", WORKER_CLI, "--url", s.url, "--prefix", prefix, "--id", `w${k}`],
            env: { NATS_NKEY_SEED: s.workerSeed },
            stdout: "null",
            stderr: "null",
          }).spawn();
        let spawned = 0;
        const procs = [spawn(spawned++), spawn(spawned++)];
        let kills = 0, duplicates = 0, redelivered = 0;
        const rng = ((x: number) => () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)(7);
        for (let step = 1; step <= 3; step++) {
          await coord.submit(step, 0, jobs(step, 16, { n: 8, R: 32 }));
          const collecting = coord.collect(step);
          // Kill a random worker at a random moment while the step runs; start a new one.
          const killer = (async () => {
            for (let k = 0; k < 2; k++) {
              await new Promise((r) => setTimeout(r, 300 + 1500 * rng()));
              const i = Math.floor(rng() * procs.length);
              procs[i].kill("SIGKILL");
              await procs[i].status;
              kills++;
              procs[i] = spawn(spawned++);
            }
          })();
          const { trajectories, metrics } = await collecting;
          await killer;
          const ids = trajectories.map((t) => t.jobId);
          assert.deepEqual(ids, jobs(step, 16).map((j) => j.jobId), `step ${step}`);
          assert.equal(new Set(ids).size, 16);
          for (const t of trajectories) assert.equal(t.responses.length, 8 * 32);
          duplicates = metrics["distributed/duplicates"];
          redelivered += metrics["distributed/redelivered"];
        }
        for (const p of procs) {
          p.kill("SIGKILL");
          await p.status;
        }
        assert.equal(kills, 6);
        // Killed mid-job, their jobs came again after the ack wait; each counted once.
        assert.ok(redelivered >= 1, "no kill hit a worker in the middle of a job");
        assert.ok(duplicates >= 0);
        await coord.close();
      });
    },
  });

  gpuTest("distributed: a slow worker's job is redone by another within the ack wait", async () => {
    const prefix = "webrl.test.slow";
    await withServer(prefix, async (s) => {
      const { coord, tiny } = await openRun(s.url, s.trainerSeed, prefix, 1);
      await coord.publishWeights(0, tiny.modelConfig, tiny.tensors);
      await coord.submit(1, 0, jobs(1, 1));
      // The slow worker takes the job and sits on it for 4 s before answering.
      const slowNc = await connectNats(s.url, { nkeySeed: s.workerSeed });
      const n = runNames(prefix);
      const msg = await jetstream(slowNc).consumers.get(n.jobStream, n.consumer)
        .then((c) => c.next({ expires: 5000 }));
      assert.ok(msg);
      const t0 = performance.now();
      const fastNc = await connectNats(s.url, { nkeySeed: s.workerSeed });
      const fast = runWorker(fastNc, { prefix, workerId: "fast", maxJobs: 1 });
      const { trajectories } = await coord.collect(1);
      const waited = (performance.now() - t0) / 1000;
      assert.equal(trajectories[0].workerId, "fast");
      assert.ok(waited < 4, `the step waited ${waited.toFixed(1)} s for the slow worker`);
      await fast;
      await slowNc.close();
      await fastNc.close();
      await coord.close();
    });
  });

  gpuTest(
    "distributed: a late worker loads the version its job names; stale versions are dropped",
    async () => {
      const prefix = "webrl.test.late";
      await withServer(prefix, async (s) => {
        const { coord, tiny } = await openRun(s.url, s.trainerSeed, prefix, 30);
        for (const v of [0, 1, 2]) await coord.publishWeights(v, tiny.modelConfig, tiny.tensors);
        // keepVersions 2: v0 is gone, so a job naming it is stale.
        await coord.submit(1, 0, jobs(1, 1));
        await coord.submit(3, 2, jobs(3, 2));
        const nc = await connectNats(s.url, { nkeySeed: s.workerSeed });
        const stats = await runWorker(nc, { prefix, workerId: "late", maxJobs: 2 });
        assert.deepEqual(stats.weightVersions, [2]);
        assert.equal(stats.dropped, 1);
        const { trajectories } = await coord.collect(3);
        assert.deepEqual(trajectories.map((t) => t.version), [2, 2]);
        await nc.close();
        await coord.close();
      });
    },
  );

  gpuTest("distributed: a restarted trainer drops the old process's jobs and answers", async () => {
    const prefix = "webrl.test.restart";
    await withServer(prefix, async (s) => {
      const first = await openRun(s.url, s.trainerSeed, prefix, 30);
      await first.coord.publishWeights(4, first.tiny.modelConfig, first.tiny.tensors);
      await first.coord.submit(5, 4, jobs(5, 3));
      const oldEpoch = first.coord.epoch;
      await first.coord.close(); // the trainer dies with 3 jobs queued
      const { coord, tiny } = await openRun(s.url, s.trainerSeed, prefix, 30);
      const tnc = await connectNats(s.url, { nkeySeed: s.trainerSeed });
      const jsm = await jetstreamManager(tnc);
      assert.equal((await jsm.streams.info(coord.names.jobStream)).state.messages, 0);
      await coord.publishWeights(4, tiny.modelConfig, tiny.tensors);
      await coord.submit(5, 4, jobs(5, 1));
      // A worker of the old run answers late: the new trainer drops it.
      const wnc = await connectNats(s.url, { nkeySeed: s.workerSeed });
      await jetstream(wnc).publish(
        coord.names.traj,
        await encodeTrajectory({
          jobId: "s5-0",
          epoch: oldEpoch,
          step: 5,
          version: 4,
          workerId: "old",
          n: 2,
          responseLength: 6,
          responses: new Int32Array(12),
          responseMask: new Int32Array(12),
          logProbs: new Float32Array(12),
          scores: null,
          genSeconds: 0,
          deliveries: 1,
        }),
      );
      const stats = await runWorker(wnc, { prefix, workerId: "new", maxJobs: 1 });
      assert.equal(stats.jobs, 1);
      const { trajectories, metrics } = await coord.collect(5);
      assert.equal(trajectories[0].workerId, "new");
      assert.equal(metrics["distributed/stale_dropped"], 1);
      await wnc.close();
      await tnc.close();
      await coord.close();
    });
  });

  Deno.test("distributed: wrong keys are refused; a worker may not touch the run's streams", async () => {
    const prefix = "webrl.test.auth";
    await withServer(prefix, async (s) => {
      const stranger = new TextDecoder().decode(createUser().getSeed());
      await assert.rejects(
        connectNats(s.url, { nkeySeed: stranger }),
        /cannot connect.*Authorization/i,
      );
      await assert.rejects(connectNats(s.url), /cannot connect/);
      const { coord } = await openRun(s.url, s.trainerSeed, prefix, 30);
      const nc = await connectNats(s.url, { nkeySeed: s.workerSeed });
      const jsm = await jetstreamManager(nc, { checkAPI: false });
      await assert.rejects(jsm.streams.purge(coord.names.jobStream), /permission/i);
      await assert.rejects(
        jetstream(nc).publish(`${prefix}.jobs`, new Uint8Array(1)),
        /permission/i,
      );
      // Another run's jobs are out of reach as well.
      const other = runNames("webrl.other.run");
      await assert.rejects(
        jetstream(nc).consumers.get(other.jobStream, other.consumer).then((c) => c.info()),
        /permission/i,
      );
      await nc.close();
      await coord.close();
    });
  });
}
