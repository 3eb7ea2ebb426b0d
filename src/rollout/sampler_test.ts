import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../testing/mod.ts";
import { Tensor } from "../tensor/mod.ts";
import { SampleBuffers, type SamplerConfig, sampleStep } from "./sampler.ts";
import { refSample, samplingDistribution, tokenLogProb } from "./ref_sampler.ts";

const base: SamplerConfig = {
  temperature: 1,
  topK: 0,
  topP: 1,
  doSample: true,
  seed: 1234,
  eosTokenIds: [],
  padTokenId: 0,
};

async function sampleRows(logitsRow: Float32Array, rows: number, cfg: SamplerConfig) {
  const V = logitsRow.length;
  const all = new Float32Array(rows * V);
  for (let r = 0; r < rows; r++) all.set(logitsRow, r * V);
  const logits = Tensor.from(all, [rows, V]);
  const bufs = SampleBuffers.create(rows, 1, new Int32Array(rows));
  sampleStep(logits, bufs, 0, cfg);
  const [tokens, lp] = [await bufs.responses.toArray(), await bufs.logProbs.toArray()];
  bufs.dispose();
  return { tokens: tokens as Int32Array, logProbs: lp as Float32Array };
}

/** Wilson-Hilferty upper quantile of chi-square at z standard deviations. */
function chiSquareCritical(df: number, z = 3.29): number {
  const a = 2 / (9 * df);
  return df * (1 - a + z * Math.sqrt(a)) ** 3;
}

const cases: [string, Partial<SamplerConfig>][] = [
  ["temperature 0.7", { temperature: 0.7 }],
  ["top-k 4", { topK: 4 }],
  ["top-p 0.8", { topP: 0.8 }],
  ["temperature 1.3, top-k 6, top-p 0.9", { temperature: 1.3, topK: 6, topP: 0.9 }],
];

for (const [name, opts] of cases) {
  gpuTest(`sampled frequencies follow the distribution: ${name}`, async () => {
    const V = 12, rows = 2500;
    const logitsRow = randomArray(V, 7, -2, 2);
    const cfg = { ...base, ...opts };
    const probs = samplingDistribution(logitsRow, cfg);
    const { tokens, logProbs } = await sampleRows(logitsRow, rows, cfg);
    const counts = new Float64Array(V);
    for (const t of tokens) counts[t]++;
    let chi = 0, df = -1;
    for (let i = 0; i < V; i++) {
      if (probs[i] === 0) {
        assert.equal(counts[i], 0, `token ${i} is outside the kept set but was sampled`);
        continue;
      }
      df++;
      chi += (counts[i] - rows * probs[i]) ** 2 / (rows * probs[i]);
    }
    assert.ok(df >= 2, `degenerate case (${df + 1} kept tokens)`);
    assert.ok(chi < chiSquareCritical(df), `chi-square ${chi.toFixed(2)} with ${df} dof`);
    // The reference draw with the same uniforms gives the same frequencies within noise.
    const ref = refSample(
      new Float32Array(rows * V).map((_, i) => logitsRow[i % V]),
      rows,
      { ...cfg, step: 0 },
    );
    const refCounts = new Float64Array(V);
    for (const t of ref) refCounts[t]++;
    for (let i = 0; i < V; i++) assert.ok(Math.abs(refCounts[i] - counts[i]) < 0.05 * rows);
    for (let r = 0; r < 5; r++) {
      assertClose([logProbs[r]], [tokenLogProb(logitsRow, tokens[r], cfg.temperature)], {
        atol: 1e-5,
      });
    }
  });
}

gpuTest(
  "a large vocabulary (256-wide workgroups, not a multiple of 256) samples kept tokens",
  async () => {
    const V = 2053, rows = 6;
    const logits = randomArray(rows * V, 3, -4, 4);
    const cfg = { ...base, topK: 40, topP: 0.7, temperature: 0.9 };
    const t = Tensor.from(logits, [rows, V]);
    const bufs = SampleBuffers.create(rows, 2, new Int32Array(rows));
    sampleStep(t, bufs, 1, cfg);
    const tokens = await bufs.responses.toArray();
    for (let r = 0; r < rows; r++) {
      const probs = samplingDistribution(logits.subarray(r * V, (r + 1) * V), cfg);
      const tok = tokens[r * 2 + 1];
      assert.ok(probs[tok] > 0, `row ${r}: token ${tok} has probability 0`);
    }
    bufs.dispose();
  },
);

gpuTest("greedy picks the first argmax; EOS finishes a row; finished rows get pad", async () => {
  const V = 300, rows = 3, R = 3;
  const logits = randomArray(rows * V, 11);
  logits[0 * V + 5] = 9; // row 0 -> 5 (EOS)
  logits[1 * V + 299] = 9; // row 1 -> 299, tied with 7: the first wins
  logits[1 * V + 7] = 9;
  logits[2 * V + 256] = 9;
  const t = Tensor.from(logits, [rows, V]);
  const cfg = { ...base, doSample: false, eosTokenIds: [5], padTokenId: 1 };
  const bufs = SampleBuffers.create(rows, R, Int32Array.from([4, 9, 0]));
  sampleStep(t, bufs, 0, cfg);
  sampleStep(t, bufs, 1, cfg);
  const [resp, mask, fin, next, pos, lp] = await Promise.all([
    bufs.responses.toArray(),
    bufs.responseMask.toArray(),
    bufs.finished.toArray(),
    bufs.nextIds.toArray(),
    bufs.positions.toArray(),
    bufs.logProbs.toArray(),
  ]);
  assert.deepEqual([...resp], [5, 1, 0, 7, 7, 0, 256, 256, 0]);
  assert.deepEqual([...mask], [1, 0, 0, 1, 1, 0, 1, 1, 0]);
  assert.deepEqual([...fin], [1, 0, 0]);
  assert.deepEqual([...next], [1, 7, 256]);
  assert.deepEqual([...pos], [6, 11, 2]);
  assertClose([lp[3]], [tokenLogProb(logits.subarray(V, 2 * V), 7, 1)], { atol: 1e-5 });
  bufs.dispose();
});

gpuTest("a fixed seed is deterministic and another seed differs", async () => {
  const logitsRow = randomArray(50, 5);
  const a = await sampleRows(logitsRow, 64, base);
  const b = await sampleRows(logitsRow, 64, base);
  const c = await sampleRows(logitsRow, 64, { ...base, seed: 99 });
  assert.deepEqual([...a.tokens], [...b.tokens]);
  assert.notDeepEqual([...a.tokens], [...c.tokens]);
});

gpuTest("sampleStep rejects bad inputs with shapes and dtypes", () => {
  const bufs = SampleBuffers.create(2, 4, new Int32Array(2));
  const wrong = Tensor.from(new Float32Array(30), [3, 10]);
  assert.throws(
    () => sampleStep(wrong, bufs, 0, base),
    /logits must be f32 \[2, V\], got f32 \[3, 10\]/,
  );
  const ints = Tensor.from(new Int32Array(20), [2, 10], "i32");
  assert.throws(() => sampleStep(ints, bufs, 0, base), /got i32 \[2, 10\]/);
  const ok = Tensor.from(new Float32Array(20), [2, 10]);
  assert.throws(() => sampleStep(ok, bufs, 4, base), /step 4 outside \[0, 4\)/);
  assert.throws(() => sampleStep(ok, bufs, 0, { ...base, topP: 0 }), /top_p/);
  assert.throws(
    () => sampleStep(ok, bufs, 0, { ...base, eosTokenIds: [1, 2, 3, 4, 5, 6, 7, 8, 9] }),
    /at most 8 EOS ids/,
  );
  bufs.dispose();
});

/** A row over two first-pass chunks (64 x 16 logits each): a few live tokens, the rest far below. */
function twoChunkRow(): Float32Array {
  const V = 2040;
  const row = new Float32Array(V).map((_, i) => -40 - (i % 97) * 0.01);
  const live = [3, 500, 1023, 1024, 1500, 2039];
  const vals = randomArray(live.length, 21, -1, 1);
  live.forEach((t, i) => row[t] = vals[i]);
  return row;
}

const chunkCases: [string, Partial<SamplerConfig>][] = [
  ["temperature only (a chunk, then a token)", { temperature: 0.8 }],
  ["top-k 4 (candidates)", { topK: 4 }],
  ["top-k 5, top-p 0.7 (candidates)", { topK: 5, topP: 0.7 }],
  ["top-p 0.8 (whole-row scan)", { topP: 0.8 }],
  ["top-k 200 (more than the candidates kept: whole-row scan)", { topK: 200, topP: 0.95 }],
];

gpuTest("rows over several chunks: every sampling path follows the distribution", async () => {
  const row = twoChunkRow(), rows = 1000;
  for (const [name, opts] of chunkCases) {
    const cfg = { ...base, ...opts };
    const probs = samplingDistribution(row, cfg);
    const { tokens } = await sampleRows(row, rows, cfg);
    // Tokens of negligible mass share one bin: a chi-square over 2040 bins would say nothing.
    const bins = new Map<number, number>();
    let restP = 0, restCount = 0;
    for (let i = 0; i < row.length; i++) if (probs[i] < 1e-6) restP += probs[i];
    for (const t of tokens) {
      assert.ok(probs[t] > 0, `${name}: token ${t} is outside the kept set`);
      if (probs[t] < 1e-6) restCount++;
      else bins.set(t, (bins.get(t) ?? 0) + 1);
    }
    assert.ok(
      restCount <= 2 + rows * restP * 10,
      `${name}: ${restCount} draws of negligible tokens`,
    );
    let chi = 0, df = -1;
    for (let i = 0; i < row.length; i++) {
      if (probs[i] < 1e-6) continue;
      df++;
      chi += ((bins.get(i) ?? 0) - rows * probs[i]) ** 2 / (rows * probs[i]);
    }
    assert.ok(df >= 2, `${name}: degenerate case`);
    assert.ok(chi < chiSquareCritical(df), `${name}: chi-square ${chi.toFixed(2)} with ${df} dof`);
    const again = await sampleRows(row, 64, cfg);
    assert.deepEqual([...again.tokens], [...tokens.subarray(0, 64)], `${name}: not deterministic`);
  }
});

gpuTest(
  "rows over several chunks: greedy takes the first argmax; ties beyond the candidates",
  async () => {
    const row = twoChunkRow();
    row[1500] = 5;
    row[500] = 5;
    const greedy = await sampleRows(row, 3, { ...base, doSample: false });
    assert.deepEqual([...greedy.tokens], [500, 500, 500]);
    // Every logit tied: top-k keeps all of them (more than a chunk's candidates), so a whole-row
    // scan decides, and the draws spread over the vocabulary.
    const flat = new Float32Array(2040);
    const { tokens } = await sampleRows(flat, 300, { ...base, topK: 3 });
    assert.ok(new Set(tokens).size > 200, `only ${new Set(tokens).size} distinct tokens`);
    assert.ok(tokens.some((t) => t >= 1024) && tokens.some((t) => t < 1024));
  },
);

gpuTest(
  "rowRng: each row draws with its own (seed, step), as a one-row batch of that seed",
  async () => {
    const V = 12, rows = 5;
    const logits = randomArray(rows * V, 9, -2, 2);
    const rng = Uint32Array.from([11, 0, 11, 3, 7, 3, 123456, 9, 5, 2]);
    const bufs = SampleBuffers.create(rows, 1, new Int32Array(rows));
    sampleStep(Tensor.from(logits, [rows, V]), bufs, 0, base, {
      rowRng: Tensor.from(rng, [rows, 2], "u32"),
    });
    const got = await bufs.responses.toArray();
    bufs.dispose();
    for (let r = 0; r < rows; r++) {
      const row = logits.subarray(r * V, (r + 1) * V);
      const one = SampleBuffers.create(1, rng[2 * r + 1] + 1, new Int32Array(1));
      sampleStep(Tensor.from(row, [1, V]), one, rng[2 * r + 1], { ...base, seed: rng[2 * r] });
      const alone = await one.responses.toArray();
      one.dispose();
      assert.equal(got[r], alone[rng[2 * r + 1]], `row ${r}`);
      const want = refSample(row, 1, { ...base, seed: rng[2 * r], step: rng[2 * r + 1] })[0];
      assert.equal(got[r], want, `row ${r} vs the reference`);
    }
  },
);
