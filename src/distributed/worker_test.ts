import assert from "node:assert/strict";
import { jetstreamManager } from "@nats-io/jetstream";
import { gpu } from "../gpu/mod.ts";
import { parseModelConfig } from "../io/mod.ts";
import { f32ToF16Into } from "../tensor/mod.ts";
import { CausalLM, type KvDtype } from "../nn/mod.ts";
import { ARITHMETIC_DATA_SOURCE } from "../reward/mod.ts";
import { generate } from "../rollout/mod.ts";
import { assertClose, gpuTest } from "../testing/mod.ts";
import { connectNats } from "./connect.ts";
import { Coordinator, type JobSpec } from "./coordinator.ts";
import { natsTestsEnabled, tinyModel, withServer } from "./test_server.ts";
import { runWorker } from "./worker.ts";

const PREFIX = "webrl.test.worker";
const enabled = await natsTestsEnabled();

function jobs(step: number, count: number): JobSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    jobId: `s${step}-${i}`,
    promptIds: [1, 2, 3, 4 + i],
    n: 2,
    responseLength: 6,
    sampling: { temperature: 1, topK: 0, topP: 1, doSample: true },
    seed: 100 * step + i,
    dataSource: ARITHMETIC_DATA_SOURCE,
    groundTruth: "7",
    extraInfo: {},
  }));
}

const coordinatorOptions = {
  prefix: PREFIX,
  jobTimeoutS: 30,
  stepTimeoutS: 60,
  maxDeliver: 5,
  keepVersions: 2,
};

/** A coordinator with the tiny model's run info and its weights as version 0. */
async function openRun(url: string, trainerSeed: string) {
  const tiny = await tinyModel();
  const nc = await connectNats(url, { nkeySeed: trainerSeed });
  const coord = await Coordinator.open(nc, coordinatorOptions);
  await coord.publishRunInfo({ tokenizerFiles: tiny.tokenizerFiles, eosTokenIds: [0], reward: {} });
  await coord.publishWeights(0, tiny.modelConfig, tiny.tensors);
  return { tiny, coord, nc };
}

if (enabled) {
  gpuTest("distributed: two workers answer every job once, with log-probs and scores", async () => {
    await withServer(PREFIX, async (s) => {
      const { coord } = await openRun(s.url, s.trainerSeed);
      await coord.submit(1, 0, jobs(1, 4));
      const w1 = await connectNats(s.url, { nkeySeed: s.workerSeed });
      const w2 = await connectNats(s.wsUrl!, { nkeySeed: s.workerSeed });
      const done = new AbortController();
      const workers = [
        runWorker(w1, { prefix: PREFIX, workerId: "a", signal: done.signal }),
        runWorker(w2, { prefix: PREFIX, workerId: "b", signal: done.signal }),
      ];
      const { trajectories, metrics } = await coord.collect(1);
      done.abort();
      const stats = await Promise.all(workers);
      assert.deepEqual(trajectories.map((t) => t.jobId), ["s1-0", "s1-1", "s1-2", "s1-3"]);
      assert.equal(stats[0].jobs + stats[1].jobs, 4);
      for (const t of trajectories) {
        assert.equal(t.responses.length, 2 * 6);
        assert.equal(t.version, 0);
        assert.ok(t.scores !== null && t.scores.length === 2);
        for (let i = 0; i < t.logProbs.length; i++) {
          if (t.responseMask[i]) assert.ok(t.logProbs[i] <= 0 && Number.isFinite(t.logProbs[i]));
        }
      }
      assert.equal(metrics["distributed/jobs"], 4);
      assert.ok(metrics["distributed/bytes_weights"] > 0);
      assert.ok(metrics["distributed/bytes_trajectories"] > 0);
      await w1.close();
      await w2.close();
      await coord.close();
    });
  });

  gpuTest(
    "distributed: a worker fetches versions as they come; each job runs on the version it names",
    async () => {
      await withServer(PREFIX, async (s) => {
        const tiny = await tinyModel();
        const nc = await connectNats(s.url, { nkeySeed: s.trainerSeed });
        const coord = await Coordinator.open(nc, { ...coordinatorOptions, keepVersions: 3 });
        await coord.publishRunInfo({
          tokenizerFiles: tiny.tokenizerFiles,
          eosTokenIds: [],
          reward: {},
        });
        // Two versions with other weights: the greedy log-probs tell which one a job ran on.
        const other = new Map([...tiny.tensors].map(([k, t]) => [k, t.map((x) => x * 1.7)]));
        const wnc = await connectNats(s.url, { nkeySeed: s.workerSeed });
        const done = new AbortController();
        const built: { version: number; eager: boolean }[] = [];
        const worker = runWorker(wnc, {
          prefix: PREFIX,
          workerId: "w",
          signal: done.signal,
          watchWeightsMs: 20,
          onWeights: (version, t) => built.push({ version, eager: t.eager }),
        });
        const until = async (what: string, ok: () => boolean) => {
          for (let t = 0; !ok(); t++) {
            if (t > 1000) throw new Error(`timed out waiting for ${what}`);
            await new Promise((r) => setTimeout(r, 20));
          }
        };
        const greedy = (step: number) =>
          jobs(step, 2).map((j, i) => ({
            ...j,
            jobId: `s${step}-${i}`,
            promptIds: [1, 2, 3, 4 + i],
            sampling: { ...j.sampling, doSample: false },
          }));
        await coord.publishWeights(0, tiny.modelConfig, tiny.tensors);
        await until("v0 built", () => built.length === 1);
        await coord.submit(1, 0, greedy(1));
        const one = await coord.collect(1);
        await coord.publishWeights(1, tiny.modelConfig, other);
        // Built before any job names it.
        await until("v1 built", () => built.length === 2);
        await coord.submit(2, 1, greedy(2));
        const two = await coord.collect(2);
        // Both are held: a late job naming v0 still runs on v0.
        await coord.submit(3, 0, greedy(3));
        const three = await coord.collect(3);
        done.abort();
        await worker;
        assert.deepEqual(built, [{ version: 0, eager: true }, { version: 1, eager: true }]);
        const lp = (r: typeof one) => r.trajectories.map((t) => [...t.logProbs]);
        assert.deepEqual(lp(three), lp(one), "the v0 jobs ran on v0");
        assert.notDeepEqual(lp(two), lp(one), "the v1 job ran on other weights");
        for (const r of [one, two, three]) {
          assert.equal(r.metrics["distributed/weights_eager_frac"], 1);
          assert.ok(r.metrics["distributed/weights_wait_s/max"] < 0.5);
          assert.ok(r.metrics["distributed/weights_fetch_s"] > 0);
          assert.ok(r.metrics["distributed/weights_build_s"] > 0);
        }
        assert.ok(one.metrics["distributed/publish_upload_s"] > 0);
        await wnc.close();
        await coord.close();
      });
    },
  );

  gpuTest(
    "distributed: jobs that come while their weights are stored run together",
    async () => {
      await withServer(PREFIX, async (s) => {
        const { tiny, coord, nc } = await openRun(s.url, s.trainerSeed);
        const wnc = await connectNats(s.url, { nkeySeed: s.workerSeed });
        const done = new AbortController();
        const worker = runWorker(wnc, { prefix: PREFIX, workerId: "w", signal: done.signal });
        // A trainer sends jobs as soon as a version is recorded, before it is stored: the first
        // job waits for v1; the jobs sent meanwhile join it.
        await coord.submit(1, 1, jobs(1, 1));
        // The worker has pulled job 1 (it waits unacked) before the clock of its wait starts.
        const jsm = await jetstreamManager(nc);
        const names = coord.names;
        while ((await jsm.consumers.info(names.jobStream, names.consumer)).num_ack_pending < 1) {
          await new Promise((r) => setTimeout(r, 20));
        }
        // Job 1 asks for v1 a little after it is pulled (it reads the run info first): the 0.6 s
        // before v1 is published leave its wait well above the 0.3 s checked below.
        await new Promise((r) => setTimeout(r, 600));
        await coord.submit(2, 1, jobs(2, 3));
        await coord.publishWeights(1, tiny.modelConfig, tiny.tensors);
        const one = await coord.collect(1), two = await coord.collect(2);
        done.abort();
        const stats = await worker;
        assert.equal(stats.jobs, 4);
        assert.equal(stats.peakJobs, 4, "the four jobs were in flight together");
        assert.equal(stats.engines, 1, "on one engine");
        assert.equal(stats.requests, 8);
        for (const t of [...one.trajectories, ...two.trajectories]) assert.equal(t.version, 1);
        assert.ok(one.metrics["distributed/weights_wait_s/max"] >= 0.3);
        await wnc.close();
        await coord.close();
      });
    },
  );

  gpuTest("distributed: a worker decodes with the run info's rollout dtype", async () => {
    await withServer(PREFIX, async (s) => {
      const tiny = await tinyModel();
      const nc = await connectNats(s.url, { nkeySeed: s.trainerSeed });
      const coord = await Coordinator.open(nc, coordinatorOptions);
      await coord.publishRunInfo({
        tokenizerFiles: tiny.tokenizerFiles,
        eosTokenIds: [],
        reward: null,
        rolloutDtype: "float16",
      });
      // Less confident weights than the trained ones, so that halves change some log-probs.
      const other = new Map([...tiny.tensors].map(([k, x]) => [k, x.map((v) => v * 1.7)]));
      await coord.publishWeights(0, tiny.modelConfig, other);
      const [job] = jobs(1, 1).map((j) => ({
        ...j,
        promptIds: [10, 20, 30, 40, 12, 13],
        responseLength: 8,
        sampling: { ...j.sampling, doSample: false },
      }));
      await coord.submit(1, 0, [job]);
      const wnc = await connectNats(s.url, { nkeySeed: s.workerSeed });
      const done = new AbortController();
      const worker = runWorker(wnc, { prefix: PREFIX, workerId: "w", signal: done.signal });
      const { trajectories: [t] } = await coord.collect(1);
      done.abort();
      await worker;
      // The weights as the worker holds them (published as halves), decoded here with each cache.
      const halves = new Map([...other].map(([name, x]) => {
        const h = new Uint16Array(x.length);
        f32ToF16Into(x, h);
        return [name, h];
      }));
      const model = CausalLM.fromTensors(parseModelConfig(tiny.modelConfig), halves, {
        dtype: gpu().hasF16 ? "f16" : "f32",
      });
      const local = async (kvDtype: KvDtype) =>
        (await generate(model, {
          inputIds: Int32Array.from(job.promptIds),
          attentionMask: new Int32Array(job.promptIds.length).fill(1),
          batch: 1,
          promptLength: job.promptIds.length,
          n: job.n,
          responseLength: job.responseLength,
          doSample: false,
          eosTokenIds: [],
          padTokenId: 0,
          seed: job.seed,
          returnLogProbs: true,
          kvDtype,
        })).logProbs!;
      const [f16, f32] = [await local("f16"), await local("f32")];
      model.dispose();
      assert.notDeepEqual(f16, f32, "the caches give other log-probs");
      assertClose(t.logProbs, f16, { atol: 1e-6, rtol: 1e-6, label: "the worker's log-probs" });
      await wnc.close();
      await coord.close();
    });
  });
}
