/**
 * The worker's engines against a real nats-server: jobs finish independently (a short job
 * queued behind a long one is published first), a greedy job is token-identical to `generate`,
 * and engines are closed with their blocks free when their version goes or the worker stops.
 */
import assert from "node:assert/strict";
import { jetstreamManager } from "@nats-io/jetstream";
import { gpu } from "../gpu/mod.ts";
import { parseModelConfig } from "../io/mod.ts";
import { f32ToF16Into } from "../tensor/mod.ts";
import { CausalLM } from "../nn/mod.ts";
import { ARITHMETIC_DATA_SOURCE } from "../reward/mod.ts";
import { type Engine, generate } from "../rollout/mod.ts";
import { assertClose, gpuTest } from "../testing/mod.ts";
import { connectNats } from "./connect.ts";
import { Coordinator, type JobSpec } from "./coordinator.ts";
import type { EngineSettings } from "../config/mod.ts";
import { decodeTrajectory } from "./protocol.ts";
import { natsTestsEnabled, tinyModel, withServer } from "./test_server.ts";
import { runWorker } from "./worker.ts";

const PREFIX = "webrl.test.engine";

function job(id: string, o: Partial<JobSpec> = {}): JobSpec {
  return {
    jobId: id,
    promptIds: [1, 2, 3, 4],
    n: 2,
    responseLength: 6,
    sampling: { temperature: 1, topK: 0, topP: 1, doSample: true },
    seed: 7,
    dataSource: ARITHMETIC_DATA_SOURCE,
    groundTruth: "7",
    extraInfo: {},
    ...o,
  };
}

/** A coordinator with the tiny model's run info (stop ids `eos`) and weights as version 0. */
async function openRun(
  url: string,
  trainerSeed: string,
  eos: number[],
  keepVersions = 2,
  engine?: EngineSettings,
) {
  const tiny = await tinyModel();
  const nc = await connectNats(url, { nkeySeed: trainerSeed });
  const coord = await Coordinator.open(nc, {
    prefix: PREFIX,
    jobTimeoutS: 30,
    stepTimeoutS: 60,
    maxDeliver: 5,
    keepVersions,
  });
  await coord.publishRunInfo({
    tokenizerFiles: tiny.tokenizerFiles,
    eosTokenIds: eos,
    reward: {},
    engine,
  });
  await coord.publishWeights(0, tiny.modelConfig, tiny.tensors);
  return { tiny, coord, nc };
}

/** Whether `engine` is closed with every block back in its pool. */
async function closedAndFree(engine: Engine): Promise<boolean> {
  const s = engine.stats();
  const refused = await engine.submit({ promptIds: [1], maxTokens: 1 }).then(
    () => false,
    () => true,
  );
  return refused && s.freeBlocks === s.numBlocks && s.running === 0 && s.waiting === 0;
}

if (await natsTestsEnabled()) {
  gpuTest("worker engine: a short job queued behind a long one is published first", async () => {
    await withServer(PREFIX, async (s) => {
      const { coord, nc } = await openRun(s.url, s.trainerSeed, []);
      // The long job is queued first; both are pulled together and share one engine.
      await coord.submit(1, 0, [job("long", { responseLength: 64 }), job("short")]);
      const wnc = await connectNats(s.url, { nkeySeed: s.workerSeed });
      const engines: Engine[] = [];
      const stats = await runWorker(wnc, {
        prefix: PREFIX,
        workerId: "w",
        maxJobs: 2,
        // A fixed pool: sized by the jobs instead, it would grow (a second engine) whenever the
        // short job happens to be decoded and acquire its engine before the long one.
        kvCacheTokens: 1024,
        onEngine: (_, e) => engines.push(e),
      });
      // The trajectory stream in publication order.
      const jsm = await jetstreamManager(nc);
      const order = [];
      for (const seq of [1, 2]) {
        const m = await jsm.streams.getMessage(coord.names.trajStream, { seq });
        order.push(await decodeTrajectory(m!.data));
      }
      assert.deepEqual(order.map((t) => t.jobId), ["short", "long"]);
      assert.ok(
        order[0].genSeconds < order[1].genSeconds,
        "the short job's time does not include the long one's",
      );
      assert.equal(stats.peakJobs, 2, "both jobs were in flight together");
      assert.equal(stats.engines, 1);
      assert.equal(stats.requests, 4);
      assert.equal(stats.engineTokens, 64 * 2 + 6 * 2, "every sampled token read back");
      assert.ok(stats.engineSteps >= 64 && stats.engineSteps < 64 + 6, "decoded side by side");
      const { trajectories } = await coord.collect(1);
      for (const t of trajectories) assert.equal(t.responses.length, t.n * t.responseLength);
      // Stopped: the engine is closed and its blocks are back.
      assert.equal(engines.length, 1);
      assert.ok(await closedAndFree(engines[0]));
      await wnc.close();
      await coord.close();
    });
  });

  gpuTest("worker engine: a greedy f32 job is token-identical to generate", async () => {
    await withServer(PREFIX, async (s) => {
      const tiny = await tinyModel();
      // The weights as the worker holds them (published as halves).
      const halves = new Map([...tiny.tensors].map(([name, x]) => {
        const h = new Uint16Array(x.length);
        f32ToF16Into(x, h);
        return [name, h];
      }));
      const model = CausalLM.fromTensors(parseModelConfig(tiny.modelConfig), halves, {
        dtype: gpu().hasF16 ? "f16" : "f32",
      });
      const prompts = [[10, 20, 30, 40, 12, 13], [5, 6, 7]];
      const R = 10;
      const local = async (eos: number[]) => {
        const P = Math.max(...prompts.map((p) => p.length));
        const inputIds = new Int32Array(prompts.length * P); // [B, P]
        const attentionMask = new Int32Array(prompts.length * P); // [B, P]
        prompts.forEach((p, b) => {
          inputIds.set(p, b * P + P - p.length);
          attentionMask.fill(1, b * P + P - p.length, b * P + P);
        });
        return await generate(model, {
          inputIds,
          attentionMask,
          batch: prompts.length,
          promptLength: P,
          n: 2,
          responseLength: R,
          doSample: false,
          eosTokenIds: eos,
          padTokenId: 0,
          returnLogProbs: true,
          kvDtype: "f32",
        });
      };
      // A stop id the first prompt's greedy response meets midway: the rows end early there.
      const eos = [(await local([])).responses[3]];
      const want = await local(eos);
      model.dispose();
      assert.ok(want.responseMask.includes(0), "a row ends at the stop id");
      const { coord } = await openRun(s.url, s.trainerSeed, eos);
      const greedy = { temperature: 1, topK: 0, topP: 1, doSample: false };
      await coord.submit(
        1,
        0,
        prompts.map((p, i) =>
          job(`g${i}`, { promptIds: p, responseLength: R, sampling: greedy, seed: i })
        ),
      );
      const wnc = await connectNats(s.url, { nkeySeed: s.workerSeed });
      await runWorker(wnc, { prefix: PREFIX, workerId: "w", maxJobs: 2 });
      const { trajectories } = await coord.collect(1);
      const rows = (a: Int32Array | Float32Array, b: number) => a.slice(b * 2 * R, (b + 1) * 2 * R);
      trajectories.forEach((t, b) => {
        assert.deepEqual([...t.responses], [...rows(want.responses, b)], `tokens of job ${b}`);
        assert.deepEqual([...t.responseMask], [...rows(want.responseMask, b)], `mask of job ${b}`);
        assertClose(t.logProbs, rows(want.logProbs!, b), {
          atol: 1e-5,
          rtol: 1e-5,
          label: `log-probs of job ${b}`,
        });
      });
      await wnc.close();
      await coord.close();
    });
  });

  gpuTest(
    "worker engine: a dropped version's engines are closed; a longer prompt gets a bigger pool",
    async () => {
      await withServer(PREFIX, async (s) => {
        const { coord, tiny } = await openRun(s.url, s.trainerSeed, [], 4);
        const wnc = await connectNats(s.url, { nkeySeed: s.workerSeed });
        const engines: { version: number; engine: Engine }[] = [];
        const done = new AbortController();
        const worker = runWorker(wnc, {
          prefix: PREFIX,
          workerId: "w",
          signal: done.signal,
          maxInFlightJobs: 1,
          watchWeightsMs: 0,
          onEngine: (version, engine) => engines.push({ version, engine }),
        });
        // v0: a short prompt, then one whose prompt and response need more than its pool.
        await coord.submit(1, 0, [job("a", { promptIds: [1, 2, 3] })]);
        await coord.collect(1);
        await coord.submit(2, 0, [job("b", { promptIds: Array(40).fill(5) })]);
        await coord.collect(2);
        assert.equal(engines.length, 2);
        const [small, big] = engines.map((e) => e.engine);
        assert.equal(small.options.numBlocks, 2, "2 samples of 3 + 6 positions");
        assert.equal(big.options.numBlocks, 6, "2 samples of 40 + 6 positions");
        assert.ok(await closedAndFree(small), "the outgrown engine is closed");
        // v1 and v2: v0 goes when v2 is built (two versions at most), and its engine with it.
        for (const v of [1, 2]) {
          await coord.publishWeights(v, tiny.modelConfig, tiny.tensors);
          await coord.submit(2 + v, v, [job(`v${v}`)]);
          await coord.collect(2 + v);
        }
        assert.deepEqual(engines.map((e) => e.version), [0, 0, 1, 2]);
        assert.ok(await closedAndFree(big), "v0's engine is closed with v0");
        assert.equal(engines[2].engine.stats().running, 0);
        done.abort();
        const stats = await worker;
        assert.equal(stats.engines, 4);
        for (const { engine } of engines) assert.ok(await closedAndFree(engine));
        await wnc.close();
        await coord.close();
      });
    },
  );

  gpuTest(
    "worker engine: the run's rollout settings size it; the worker's own flags win",
    async () => {
      await withServer(PREFIX, async (s) => {
        const run = { maxNumSeqs: 3, kvCacheTokens: 64, prefixCaching: false };
        const { coord } = await openRun(s.url, s.trainerSeed, [], 2, run);
        const wnc = await connectNats(s.url, { nkeySeed: s.workerSeed });
        const engines: Engine[] = [];
        await coord.submit(1, 0, [job("a")]);
        await runWorker(wnc, {
          prefix: PREFIX,
          workerId: "w",
          maxJobs: 1,
          onEngine: (_, e) => engines.push(e),
        });
        assert.equal(engines.length, 1);
        assert.equal(engines[0].options.maxSeqs, 3, "rollout.max_num_seqs");
        assert.equal(
          engines[0].options.numBlocks,
          4,
          "rollout.kv_cache_tokens 64 = 4 blocks of 16",
        );
        assert.equal(engines[0].options.prefixCaching, false, "rollout.enable_prefix_caching");
        await coord.collect(1);
        // The worker's own pool sizes win over the run's.
        await coord.submit(2, 0, [job("b")]);
        engines.length = 0;
        await runWorker(wnc, {
          prefix: PREFIX,
          workerId: "w",
          maxJobs: 1,
          maxNumSeqs: 5,
          kvCacheTokens: 32,
          onEngine: (_, e) => engines.push(e),
        });
        assert.equal(engines[0].options.maxSeqs, 5);
        assert.equal(engines[0].options.numBlocks, 2);
        assert.equal(engines[0].options.prefixCaching, false);
        await coord.collect(2);
        await wnc.close();
        await coord.close();
      });
    },
  );
}
