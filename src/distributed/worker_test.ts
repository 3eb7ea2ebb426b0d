import assert from "node:assert/strict";
import { ARITHMETIC_DATA_SOURCE } from "../reward/mod.ts";
import { gpuTest } from "../testing/mod.ts";
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

if (enabled) {
  gpuTest("distributed: two workers answer every job once, with log-probs and scores", async () => {
    await withServer(PREFIX, async (s) => {
      const tiny = await tinyModel();
      const nc = await connectNats(s.url, { nkeySeed: s.trainerSeed });
      const coord = await Coordinator.open(nc, coordinatorOptions);
      await coord.publishRunInfo({
        tokenizerFiles: tiny.tokenizerFiles,
        eosTokenIds: [0],
        reward: {},
      });
      await coord.publishWeights(0, tiny.modelConfig, tiny.tensors);
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
}
