import assert from "node:assert/strict";
import { type CausalLM, PagedKvCache } from "../nn/mod.ts";
import { assertClose, gpuTest } from "../testing/mod.ts";
import { Engine, type EngineOptions, type EngineResult } from "./engine.ts";
import { greedyOptions, tinyEngineModel } from "./test_engine.ts";

/** Prompts of 9 tokens (the last block partly filled) and 8 (every block full, blocks of 4). */
function setup() {
  const model = tinyEngineModel();
  const V = model.config.vocabSize;
  const prompts = [9, 8, 9].map((len, p) =>
    Int32Array.from({ length: len }, (_, i) => (p * 37 + i * 11 + 5) % V)
  );
  return { model, prompts };
}

const N = 3; // samples per prompt

// The prefix cache off: these count what sharing alone saves (engine_prefix_cache_test.ts has both).
const opts = (o: Partial<EngineOptions> = {}): EngineOptions =>
  greedyOptions({
    prefixCaching: false,
    maxSeqs: 8,
    sampling: { temperature: 1, doSample: true },
    ...o,
  });

/** Every sample of every prompt at once; sample j of prompt p has seed 100 p + j. */
async function run(
  model: CausalLM,
  prompts: Int32Array[],
  o: EngineOptions,
  maxTokens: (j: number) => number = () => 10,
) {
  const engine = new Engine(model, o);
  const results = await Promise.all(prompts.flatMap((promptIds, p) =>
    Array.from(
      { length: N },
      (_, j) =>
        engine.submit({
          promptIds,
          maxTokens: maxTokens(j),
          seed: 100 * p + j,
          returnLogProbs: true,
        }),
    )
  ));
  const stats = engine.stats();
  await engine.close();
  return { results, stats };
}

function assertSame(got: EngineResult[], want: EngineResult[]) {
  got.forEach((g, i) => {
    assert.deepEqual([...g.tokens], [...want[i].tokens], `tokens of request ${i}`);
    assertClose(g.logProbs!, want[i].logProbs!, {
      atol: 1e-5,
      rtol: 1e-5,
      label: `log-probs of request ${i}`,
    });
  });
}

gpuTest(
  "engine prefixes: n samples of a prompt share one prefill and draw what unshared ones draw",
  async () => {
    const { model, prompts } = setup();
    const plain = await run(model, prompts, opts({ sharePrefixes: false }));
    const shared = await run(model, prompts, opts());
    assertSame(shared.results, plain.results);
    // Samples of one prompt differ (their own seeds), so sharing did not copy one sample.
    assert.notDeepEqual([...shared.results[0].tokens], [...shared.results[1].tokens]);
    const requested = N * (9 + 8 + 9);
    assert.equal(plain.stats.promptTokens, requested);
    assert.equal(plain.stats.prefillTokens, requested);
    assert.equal(plain.stats.prefills, N * prompts.length);
    assert.equal(shared.stats.promptTokens, requested);
    assert.equal(shared.stats.prefillTokens, 9 + 8 + 9, "each prompt prefilled once");
    assert.equal(shared.stats.prefills, prompts.length);
    for (const { stats } of [plain, shared]) {
      assert.equal(stats.freeBlocks, stats.numBlocks, "every block back in the pool");
      assert.equal(stats.preemptions, 0);
    }
    // Shared full blocks: fewer blocks held at the peak (the 9-token prompts' template block
    // costs one each, the shared two full blocks save two per sample beside the first).
    assert.ok(shared.stats.peakBlocks < plain.stats.peakBlocks, JSON.stringify(shared.stats));
    model.dispose();
  },
);

gpuTest(
  "engine prefixes: a sample admitted after its siblings started still shares; a lone prompt does not",
  async () => {
    const { model, prompts } = setup();
    // Room for 2 sequences: the third sample waits until the first (3 tokens) ends and is read
    // (one step between reads), while the second (10) still runs.
    const lengths = (j: number) => [3, 10, 10][j];
    const one = prompts.slice(0, 1), o = { maxSeqs: 2, stepsInFlight: 1 };
    const plain = await run(model, one, opts({ ...o, sharePrefixes: false }), lengths);
    const shared = await run(model, one, opts(o), lengths);
    assertSame(shared.results, plain.results);
    assert.equal(shared.stats.prefillTokens, 9, JSON.stringify(shared.stats));
    assert.equal(shared.stats.freeBlocks, shared.stats.numBlocks);
    const engine = new Engine(model, opts());
    await engine.submit({ promptIds: prompts[0], maxTokens: 3 });
    await engine.submit({ promptIds: prompts[0], maxTokens: 3 });
    // One at a time: nothing to share with, each prefilled on its own.
    assert.equal(engine.stats().prefillTokens, 18);
    assert.equal(engine.stats().freeBlocks, engine.stats().numBlocks);
    await engine.close();
    model.dispose();
  },
);

gpuTest(
  "engine prefixes: a small pool preempts sequences holding shared blocks and stays exact",
  async () => {
    const { model, prompts } = setup();
    const plain = await run(model, prompts, opts({ sharePrefixes: false }), () => 14);
    // 9 blocks of 4: three samples of a 9-token prompt hold 2 shared + 1 template + 3 x 4 own
    // blocks at 23 positions, so the pool runs dry and the newest samples are preempted.
    const small = await run(model, prompts, opts({ numBlocks: 9 }), () => 14);
    assertSame(small.results, plain.results);
    assert.ok(small.stats.preemptions > 0, `preemptions ${small.stats.preemptions}`);
    assert.ok(small.stats.peakBlocks <= 9);
    assert.equal(small.stats.freeBlocks, 9, "every block back in the pool");
    model.dispose();
  },
);

gpuTest(
  "engine prefixes: samples admitted together copy their prompt's partly filled block from one staging",
  async () => {
    const { model, prompts: [a, b] } = setup();
    // Two 9-token prompts (their third block partly filled) and an 8-token one (blocks all full).
    const prompts = [a, b, a.map((x) => (x + 1) % model.config.vocabSize)];
    const copies: number[] = [];
    const copyBlock = PagedKvCache.prototype.copyBlock;
    PagedKvCache.prototype.copyBlock = function (from, to, rows) {
      copies.push(to.length);
      return copyBlock.call(this, from, to, rows);
    };
    try {
      const plain = await run(model, prompts, opts({ sharePrefixes: false, maxSeqs: 9 }));
      assert.deepEqual(copies, []);
      const shared = await run(model, prompts, opts({ maxSeqs: 9 }));
      assertSame(shared.results, plain.results);
    } finally {
      PagedKvCache.prototype.copyBlock = copyBlock;
    }
    // One copy per 9-token prompt, into its N samples' own blocks.
    assert.deepEqual(copies, [N, N]);
    model.dispose();
  },
);
