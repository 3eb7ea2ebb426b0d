import assert from "node:assert/strict";
import { type CausalLM, PagedKvCache, type PagedSequence } from "../nn/mod.ts";
import { assertClose, gpuTest } from "../testing/mod.ts";
import { Engine, type EngineOptions, type EngineResult, type EngineStats } from "./engine.ts";
import { reserveCached } from "./engine_prefix_cache.ts";
import type { StepSequence } from "./engine_step.ts";
import { greedyOptions as opts, tinyEngineModel } from "./test_engine.ts";

function setup() {
  const model = tinyEngineModel();
  const V = model.config.vocabSize;
  // Token ids drawn from seed k (a small LCG): distinct prompts for distinct k.
  const ids = (len: number, k: number) => {
    let x = 1 + 7919 * k;
    return Int32Array.from({ length: len }, () => (x = (x * 1103515245 + 12345) % 2 ** 31) % V);
  };
  return { model, ids };
}

/** A request: its prompt (or a function of the results so far) and its length. */
interface Turn {
  prompt: Int32Array | ((done: EngineResult[]) => Int32Array);
  maxTokens: number;
}

/**
 * Runs `waves` of requests on one engine, each wave submitted together once the last one ended;
 * the results in order, the stats after every wave.
 */
async function run(model: CausalLM, o: EngineOptions, waves: Turn[][]) {
  const engine = new Engine(model, o);
  const results: EngineResult[] = [], stats: EngineStats[] = [];
  for (const wave of waves) {
    const done = [...results];
    results.push(
      ...await Promise.all(wave.map((t, i) =>
        engine.submit({
          promptIds: typeof t.prompt === "function" ? t.prompt(done) : t.prompt,
          maxTokens: t.maxTokens,
          seed: 7 + results.length + i,
          returnLogProbs: true,
        })
      )),
    );
    stats.push(engine.stats());
  }
  await engine.close();
  return { results, stats, closed: engine.stats() };
}

/**
 * Caching on and off give the same tokens and log-probs (close: the cached prefix is read from
 * the KV cache, which an f16 one rounds), and the runs' results.
 */
async function same(model: CausalLM, o: Partial<EngineOptions>, waves: Turn[][]) {
  const tol = o.kvDtype === "f16" ? 1e-2 : 1e-4;
  const off = await run(model, opts({ ...o, prefixCaching: false }), waves);
  const on = await run(model, opts(o), waves);
  on.results.forEach((r, i) => {
    assert.deepEqual([...r.tokens], [...off.results[i].tokens], `tokens of request ${i}`);
    assertClose(r.logProbs!, off.results[i].logProbs!, { atol: tol, rtol: tol, label: `${i}` });
  });
  assert.equal(off.stats.at(-1)!.cachedTokens, 0);
  return { on, off };
}

const cat = (...parts: Iterable<number>[]) => Int32Array.from(parts.flatMap((p) => [...p]));

gpuTest(
  "prefix cache: the next turn of a finished request prefills only its new tokens",
  async () => {
    const { model, ids } = setup();
    const p = ids(9, 0), extra = ids(3, 1);
    const { on: half } = await same(model, { kvDtype: "f16" }, [
      [{ prompt: p, maxTokens: 6 }],
      [{ prompt: (d) => cat(p, d[0].tokens, extra, ids(40, 2)), maxTokens: 5 }],
    ]);
    assert.equal(half.stats[1].cachedTokens, 12);
    const { on, off } = await same(model, {}, [
      [{ prompt: p, maxTokens: 6 }],
      [{ prompt: (d) => cat(p, d[0].tokens, extra), maxTokens: 5 }],
    ]);
    // 9 + 6 tokens, the last without keys yet: 14 positions cached, 3 full blocks of 4.
    const [first, second] = on.stats;
    assert.equal(first.cachedTokens, 0);
    assert.equal(second.cachedTokens, 12);
    assert.equal(second.prefillTokens - first.prefillTokens, 18 - 12);
    assert.equal(off.stats[1].prefillTokens - off.stats[0].prefillTokens, 18);
    assert.equal(second.freeBlocks, second.numBlocks, "cached blocks count as free");
    assert.ok(second.cachedBlocks >= 4);
    assert.equal(on.closed.cachedBlocks, 0);
    assert.equal(on.closed.freeBlocks, on.closed.numBlocks);
    model.dispose();
  },
);

gpuTest("prefix cache: the same prompt again reuses all but its last token's block", async () => {
  const { model, ids } = setup();
  const waves = (len: number) => [[{ prompt: ids(len, 2), maxTokens: 4 }], [{
    prompt: ids(len, 2),
    maxTokens: 4,
  }]];
  for (const [len, cached] of [[9, 8], [8, 4], [3, 0]]) {
    const { on } = await same(model, {}, waves(len));
    assert.equal(on.stats[1].cachedTokens, cached, `prompt of ${len}`);
    assert.equal(on.stats[1].prefillTokens, 2 * len - cached);
  }
  model.dispose();
});

gpuTest(
  "prefix cache: one batch mixes rows cached to different block boundaries with uncached ones",
  async () => {
    const { model, ids } = setup();
    const a = ids(9, 3), b = ids(13, 4);
    const { on } = await same(model, {}, [
      [{ prompt: a, maxTokens: 5 }, { prompt: b, maxTokens: 2 }],
      [
        { prompt: (d) => cat(a, d[0].tokens, ids(2, 5)), maxTokens: 6 }, // 12 cached of 16
        { prompt: cat(b.subarray(0, 6), ids(5, 6)), maxTokens: 6 }, // 4 cached of 11
        { prompt: ids(7, 7), maxTokens: 6 }, // nothing cached
        { prompt: b, maxTokens: 3 }, // 12 cached of 13
      ],
    ]);
    assert.equal(on.stats[1].cachedTokens, 12 + 4 + 12);
    model.dispose();
  },
);

gpuTest("prefix cache: sampled output with seeds equals caching off", async () => {
  const { model, ids } = setup();
  const p = ids(10, 8);
  const sampling = { temperature: 1, doSample: true };
  const { on } = await same(model, { sampling }, [
    [{ prompt: p, maxTokens: 7 }, { prompt: p, maxTokens: 7 }],
    [{ prompt: (d) => cat(p, d[1].tokens, ids(1, 9)), maxTokens: 7 }, {
      prompt: p,
      maxTokens: 7,
    }],
  ]);
  assert.notDeepEqual([...on.results[0].tokens], [...on.results[1].tokens]);
  assert.ok(on.stats[1].cachedTokens > 0);
  model.dispose();
});

gpuTest("prefix cache: a small pool evicts cached blocks and stays exact", async () => {
  const { model, ids } = setup();
  // 12 blocks of 4: wave 1 leaves 4 x 4 cached blocks; wave 2's fresh prompts need most of them.
  const first = [0, 1, 2, 3].map((k) => ({ prompt: ids(9, 10 + k), maxTokens: 8 }));
  const second = [0, 1, 2, 3].map((k) => ({ prompt: ids(9, 20 + k), maxTokens: 8 }));
  const third = [{ prompt: (d: EngineResult[]) => cat(ids(9, 23), d[7].tokens), maxTokens: 6 }];
  const { on } = await same(model, { numBlocks: 12 }, [first, second, third]);
  const [w1, w2, w3] = on.stats;
  assert.ok(w1.cachedBlocks > 0 && w1.cachedBlocks <= 12);
  assert.equal(w2.cachedTokens, 0);
  assert.ok(w3.cachedTokens > 0, "the last finished request's blocks survived eviction");
  for (const s of on.stats) assert.equal(s.freeBlocks, 12, "every block free or cached");
  assert.ok(w3.peakBlocks <= 12);
  assert.equal(on.closed.freeBlocks, 12);
  assert.equal(on.closed.cachedBlocks, 0);
  model.dispose();
});

gpuTest("prefix cache: resetPrefixCache forgets every cached block", async () => {
  const { model, ids } = setup();
  const engine = new Engine(model, opts());
  const p = ids(13, 30);
  await engine.submit({ promptIds: p, maxTokens: 3 });
  assert.ok(engine.stats().cachedBlocks > 0);
  engine.resetPrefixCache();
  assert.equal(engine.stats().cachedBlocks, 0);
  await engine.submit({ promptIds: p, maxTokens: 3 });
  assert.equal(engine.stats().cachedTokens, 0);
  await engine.submit({ promptIds: p, maxTokens: 3 });
  assert.equal(engine.stats().cachedTokens, 12);
  await engine.close();
  model.dispose();
});

gpuTest(
  "prefix cache: an admission the pool is short for leaves the eviction order and looks up once",
  () => {
    const cache = PagedKvCache.create({
      layers: 1,
      numBlocks: 6,
      blockSize: 4,
      kvHeads: 1,
      headDim: 2,
    });
    const looked: number[] = [];
    const findPrefix = cache.findPrefix.bind(cache);
    cache.findPrefix = (ids, limit) => (looked.push(limit), findPrefix(ids, limit));
    const seq = (): PagedSequence => ({ length: 0, blocks: [] });
    const a = Int32Array.from({ length: 8 }, (_, i) => i + 1), b = a.map((x) => x + 10);
    // a's two blocks, then b's, cached nobody holding them: released in that order.
    const published = [a, b].map((ctx) => {
      const s = seq();
      cache.reserve(s, 8);
      cache.publish(s, ctx, 8);
      const blocks = [...s.blocks];
      cache.release(s);
      return blocks;
    });
    const rest = seq();
    assert.ok(cache.reserve(rest, 8), "the last two free blocks");
    // 20 tokens starting with a: 6 blocks with the first token sampled, a's 2 among them, but
    // only b's 2 idle blocks left besides.
    const waiting: StepSequence = {
      prompt: Int32Array.from([...a, ...b, ...b.subarray(0, 4)]),
      tokens: [],
      sampled: 0,
      seed: 0,
      cache: seq(),
      row: -1,
      prefix: null,
      cached: 0,
      probe: null,
    };
    for (let step = 0; step < 3; step++) assert.ok(!reserveCached(cache, waiting, 20));
    assert.deepEqual(looked, [19], "nothing changed between the tries: one look-up");
    assert.deepEqual(waiting.cache.blocks, []);
    assert.equal(waiting.cached, 0);
    assert.equal(cache.freeBlocks, 4);
    // Least recently released first, as if the admission had not been tried: a's last block
    // (a sequence releases its last block first), a's first, then b's.
    const next = seq();
    assert.ok(cache.reserve(next, 12));
    assert.deepEqual(next.blocks, [published[0][1], published[0][0], published[1][1]]);
    // The cache changed (a's blocks evicted): the next try looks again, finds nothing of a.
    cache.release(next);
    cache.release(rest);
    assert.ok(reserveCached(cache, waiting, 20));
    assert.deepEqual(looked, [19, 19]);
    assert.equal(waiting.cached, 0);
    cache.release(waiting.cache);
    cache.dispose();
  },
);
