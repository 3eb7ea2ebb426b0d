import assert from "node:assert/strict";
import type { KvDtype } from "../nn/mod.ts";
import { assertClose, gpuTest, leftPadded } from "../testing/mod.ts";
import { Engine, type EngineResult } from "./engine.ts";
import { generate } from "./generate.ts";
import { greedyOptions as greedy, tinyEngineModel } from "./test_engine.ts";

const PADS = [4, 0, 6, 2, 5, 1];
const P = 9;

function setup() {
  const model = tinyEngineModel();
  const { ids, mask } = leftPadded(PADS.length, P, PADS, model.config.vocabSize, 8);
  const prompts = PADS.map((pad, b) => ids.slice(b * P + pad, (b + 1) * P));
  return { model, ids, mask, prompts };
}

/** generate's greedy responses (tokens, log-probs) of every prompt, R tokens each. */
async function reference(
  s: ReturnType<typeof setup>,
  R: number,
  options: { kvDtype?: KvDtype; eos?: number[] } = {},
) {
  const out = await generate(s.model, {
    inputIds: s.ids,
    attentionMask: s.mask,
    batch: PADS.length,
    promptLength: P,
    responseLength: R,
    doSample: false,
    eosTokenIds: options.eos ?? [],
    padTokenId: 0,
    returnLogProbs: true,
    kvDtype: options.kvDtype,
  });
  return PADS.map((_, b) => ({
    tokens: [...out.responses.subarray(b * R, (b + 1) * R)],
    logProbs: out.logProbs!.subarray(b * R, (b + 1) * R),
  }));
}

function submitAll(engine: Engine, prompts: Int32Array[], maxTokens: (b: number) => number) {
  return prompts.map((p, b) =>
    engine.submit({ promptIds: p, maxTokens: maxTokens(b), returnLogProbs: true })
  );
}

function assertMatches(got: EngineResult[], want: Awaited<ReturnType<typeof reference>>) {
  got.forEach((g, b) => {
    const n = g.tokens.length;
    assert.deepEqual([...g.tokens], want[b].tokens.slice(0, n), `tokens of request ${b}`);
    assertClose(g.logProbs!, want[b].logProbs.subarray(0, n), {
      atol: 1e-5,
      rtol: 1e-5,
      label: `log-probs of request ${b}`,
    });
  });
}

gpuTest(
  "engine: greedy ragged requests at once equal generate's, pool all free at the end",
  async () => {
    const s = setup();
    const R = 12;
    const maxTokens = (b: number) => [12, 3, 7, 12, 1, 9][b];
    const want = await reference(s, R);
    const engine = new Engine(s.model, greedy());
    const got = await Promise.all(submitAll(engine, s.prompts, maxTokens));
    got.forEach((g, b) => {
      assert.equal(g.tokens.length, maxTokens(b), `request ${b} length`);
      assert.equal(g.finishReason, "length");
    });
    assertMatches(got, want);
    const st = engine.stats();
    assert.equal(st.freeBlocks, st.numBlocks, "every block back in the pool");
    assert.equal(st.prefills, PADS.length);
    assert.equal(st.preemptions, 0);
    assert.ok(st.running === 0 && st.waiting === 0);
    await engine.close();
    await assert.rejects(engine.submit({ promptIds: [3], maxTokens: 1 }), /after close/);
    s.model.dispose();
  },
);

gpuTest("engine: requests submitted while others run; EOS stops one", async () => {
  const s = setup();
  const R = 10;
  const want = await reference(s, R);
  // One step between reads: request 0's end is read while request 1 still has steps to run.
  const engine = new Engine(s.model, greedy({ maxSeqs: 3, stepsInFlight: 1 }));
  const first = submitAll(engine, s.prompts.slice(0, 2), (b) => [2, 10][b]);
  await first[0]; // request 1 is mid-sequence now
  assert.ok(engine.stats().running >= 1, `request 1 still runs: ${JSON.stringify(engine.stats())}`);
  const later = submitAll(engine, s.prompts.slice(2), () => R);
  const got = await Promise.all([...first, ...later]);
  assertMatches(got, want);
  assert.equal(engine.stats().freeBlocks, engine.stats().numBlocks);
  await engine.close();

  // An EOS: row 3's third greedy token; requests whose greedy output holds it stop there.
  const eos = want[3].tokens[2];
  const withEos = await reference(s, R, { eos: [eos] });
  // The EOS is read up to stepsInFlight - 1 steps late: the tokens sampled meanwhile are
  // dropped (none when every step is read before the next is recorded), the blocks all return.
  for (const stepsInFlight of [1, 2, 4]) {
    const e2 = new Engine(s.model, greedy({ eosTokenIds: [eos], stepsInFlight }));
    const res = await Promise.all(submitAll(e2, s.prompts, () => R));
    res.forEach((g, b) => {
      const cut = want[b].tokens.indexOf(eos);
      assert.equal(g.finishReason, cut >= 0 ? "stop" : "length", `request ${b}`);
      assert.equal(g.tokens.length, cut >= 0 ? cut + 1 : R, `request ${b} length`);
      assert.deepEqual([...g.tokens], withEos[b].tokens.slice(0, g.tokens.length));
    });
    assert.equal(res[3].finishReason, "stop");
    const stops = res.filter((g) => g.finishReason === "stop").length;
    const { dropped, freeBlocks, numBlocks } = e2.stats();
    if (stepsInFlight === 1) assert.equal(dropped, 0);
    else assert.ok(dropped >= 1 && dropped <= stops * (stepsInFlight - 1), `dropped ${dropped}`);
    // Past one step in flight, later steps are recorded while earlier tokens are read.
    const overlapped = e2.stats().stepsWhileReading;
    if (stepsInFlight === 1) assert.equal(overlapped, 0);
    else assert.ok(overlapped > 0, `steps recorded during reads: ${overlapped}`);
    assert.equal(freeBlocks, numBlocks);
    assert.ok(res[3].tokens.length <= 3);
    await e2.close();
  }
  s.model.dispose();
});

gpuTest(
  "engine: a pool smaller than maxSeqs x length preempts and still matches generate",
  async () => {
    const s = setup();
    const R = 14;
    const want = await reference(s, R);
    // 6 blocks of 4 = 24 positions; each sequence reaches up to 9 + 14 = 23.
    const engine = new Engine(s.model, greedy({ maxSeqs: 4, numBlocks: 6 }));
    const got = await Promise.all(submitAll(engine, s.prompts, () => R));
    assertMatches(got, want);
    const st = engine.stats();
    assert.ok(st.preemptions > 0, `preemptions ${st.preemptions}`);
    assert.ok(st.prefills > PADS.length, "preempted requests are prefilled again");
    assert.ok(st.peakBlocks <= 6);
    assert.equal(st.freeBlocks, 6);
    await assert.rejects(
      engine.submit({ promptIds: s.prompts[1], maxTokens: 16 }),
      /needs 7 blocks of 4, the pool has 6/,
    );
    await engine.close();
    s.model.dispose();
  },
);

gpuTest("engine: f16 KV cache follows generate's f16 cache and stays near f32", async () => {
  const s = setup();
  const R = 8;
  const want16 = await reference(s, R, { kvDtype: "f16" });
  const want32 = await reference(s, R);
  const engine = new Engine(s.model, greedy({ kvDtype: "f16" }));
  const got = await Promise.all(submitAll(engine, s.prompts, () => R));
  assertMatches(got, want16);
  got.forEach((g, b) => {
    assertClose(g.logProbs!, want32[b].logProbs, { atol: 2e-2, rtol: 0, label: `f16 vs f32 ${b}` });
  });
  await engine.close();
  s.model.dispose();
});

gpuTest("engine: a sampled request draws the same tokens alone or beside others", async () => {
  const s = setup();
  const opts = greedy({ sampling: { temperature: 1, doSample: true } });
  const alone = new Engine(s.model, opts);
  const a = await alone.submit({ promptIds: s.prompts[0], maxTokens: 10, seed: 77 });
  await alone.close();
  const busy = new Engine(s.model, opts);
  const others = s.prompts.slice(1).map((p, i) =>
    busy.submit({ promptIds: p, maxTokens: 4 + i, seed: i })
  );
  const b = await busy.submit({ promptIds: s.prompts[0], maxTokens: 10, seed: 77 });
  const c = await busy.submit({ promptIds: s.prompts[0], maxTokens: 10, seed: 78 });
  await Promise.all(others);
  await busy.close();
  assert.deepEqual([...b.tokens], [...a.tokens]);
  assert.notDeepEqual([...c.tokens], [...a.tokens], "another seed draws other tokens");
  s.model.dispose();
});
