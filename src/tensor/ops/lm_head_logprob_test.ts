import assert from "node:assert/strict";
import { gpu } from "../../gpu/mod.ts";
import { assertClose, finiteDiff, gpuTest, randomArray, rng } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import { logprobEntropyRef } from "../ref/logprob.ts";
import { lmHeadLogprobBackwardRef, lmHeadLogprobRef } from "../ref/lm_head_logprob.ts";
import { embedding } from "./embedding.ts";
import { lmHeadChunkColumns, lmHeadLogprob, type LmHeadLogprobOptions } from "./lm_head_logprob.ts";
import { logprobEntropy } from "./logprob.ts";
import { linear } from "./matmul.ts";

function targetsFor(N: number, V: number, seed: number): Int32Array {
  const r = rng(seed);
  return Int32Array.from(
    { length: N },
    (_, i) => i === 1 || r() < 0.2 ? -100 : Math.floor(r() * V),
  );
}

/** chunkBytes that give `cols` columns per chunk for N rows of width C. */
const bytesFor = (cols: number, N: number, C: number) => cols * 4 * Math.max(N, C);

// [N, C, V, chunk columns]: one chunk, several with a short last one, the target in the last one.
const CASES: [number, number, number, number][] = [
  [1, 4, 5, 5],
  [6, 8, 300, 64],
  [5, 12, 1031, 128],
  [40, 16, 200, 64],
];

gpuTest("lmHeadChunkColumns: budget, binding limit and alignment", () => {
  assert.equal(lmHeadChunkColumns({ rows: 4, hidden: 8, vocab: 100 }), 100);
  assert.equal(lmHeadChunkColumns({ rows: 10, hidden: 8, vocab: 1000, chunkBytes: 40 * 130 }), 128);
  const max = gpu().limits.maxStorageBufferBindingSize;
  const cols = lmHeadChunkColumns({ rows: 1104, hidden: 32, vocab: 151936, chunkBytes: 2 ** 40 });
  assert.ok(cols * 1104 * 4 <= max && cols % 64 === 0 && cols < 151936, `${cols}`);
  assert.throws(
    () => lmHeadChunkColumns({ rows: 1000, hidden: 8, vocab: 5000, chunkBytes: 1000 }),
    /1000 rows x hidden 8 .*fewer rows per micro-batch/,
  );
});

gpuTest("chunked reference equals the whole-vocabulary one and logprobEntropyRef", () => {
  const N = 4, C = 6, V = 70, T = 0.7;
  const h = randomArray(N * C, 1, -1, 1), w = randomArray(V * C, 2, -1, 1);
  const ts = targetsFor(N, V, 3);
  const whole = lmHeadLogprobRef(h, w, ts, { temperature: T });
  const chunked = lmHeadLogprobRef(h, w, ts, { temperature: T, chunk: 16 });
  const logits = new Float64Array(N * V);
  for (let n = 0; n < N; n++) {
    for (let v = 0; v < V; v++) {
      for (let c = 0; c < C; c++) logits[n * V + v] += h[n * C + c] * w[v * C + c];
    }
  }
  const ref = logprobEntropyRef(logits, ts, { temperature: T });
  for (const r of [whole, chunked]) {
    assertClose(r.logProbs, ref.logProbs, { atol: 1e-12 });
    assertClose(r.entropy, ref.entropy, { atol: 1e-12 });
  }
  assertClose(chunked.sumPiSquared, whole.sumPiSquared, { atol: 1e-12 });
  for (let n = 0; n < N; n++) {
    let s = 0;
    for (let v = 0; v < V; v++) {
      s += Math.exp(2 * (logits[n * V + v] / T - ref.lse[n]));
    }
    assert.ok(Math.abs(whole.sumPiSquared[n] - s) < 1e-12);
  }
});

gpuTest("lmHeadLogprob forward matches the reference over chunks", async () => {
  for (const [i, [N, C, V, cols]] of CASES.entries()) {
    const h = randomArray(N * C, 10 + i, -1, 1), w = randomArray(V * C, 20 + i, -1, 1);
    const ts = targetsFor(N, V, 30 + i);
    ts[N - 1] = V - 1; // a target in the last (short) chunk
    for (const temperature of [1, 0.6]) {
      const out = lmHeadLogprob(
        Tensor.from(h, [N, C]),
        Tensor.from(w, [V, C]),
        Tensor.from(ts, [N], "i32"),
        {
          temperature,
          withEntropy: true,
          withSumPiSquared: true,
          chunkBytes: bytesFor(cols, N, C),
        },
      );
      const ref = lmHeadLogprobRef(h, w, ts, { temperature });
      const label = `N=${N} C=${C} V=${V} cols=${cols} T=${temperature}`;
      assertClose(await out.logProbs.toArray(), ref.logProbs, { atol: 3e-5, label: `lp ${label}` });
      assertClose(await out.entropy!.toArray(), ref.entropy, { atol: 3e-5, label: `H ${label}` });
      assertClose(await out.sumPiSquared!.toArray(), ref.sumPiSquared, {
        atol: 1e-6,
        label: `spp ${label}`,
      });
      // each output alone
      const lp = lmHeadLogprob(
        Tensor.from(h, [N, C]),
        Tensor.from(w, [V, C]),
        Tensor.from(ts, [N], "i32"),
        {
          temperature,
          chunkBytes: bytesFor(cols, N, C),
        },
      );
      assert.equal(lp.entropy, null);
      assertClose(await lp.logProbs.toArray(), ref.logProbs, { atol: 3e-5, label: `lp1 ${label}` });
      const spp = lmHeadLogprob(
        Tensor.from(h, [N, C]),
        Tensor.from(w, [V, C]),
        Tensor.from(ts, [N], "i32"),
        {
          temperature,
          withSumPiSquared: true,
          chunkBytes: bytesFor(cols, N, C),
        },
      );
      assertClose(await spp.sumPiSquared!.toArray(), ref.sumPiSquared, { atol: 1e-6, label });
    }
  }
});

gpuTest("lmHeadLogprob backward: d hidden and d weight over chunks", async () => {
  for (const [i, [N, C, V, cols]] of CASES.entries()) {
    const h = randomArray(N * C, 40 + i, -1, 1), w = randomArray(V * C, 50 + i, -1, 1);
    const ts = targetsFor(N, V, 60 + i);
    const gLp = randomArray(N, 70 + i), gEnt = randomArray(N, 80 + i);
    const temperature = i % 2 ? 0.8 : 1;
    for (const withEntropy of [true, false]) {
      const ht = Tensor.from(h, [N, C]), wt = Tensor.from(w, [V, C]);
      ht.requiresGrad = wt.requiresGrad = true;
      const out = lmHeadLogprob(ht, wt, Tensor.from(ts, [N], "i32"), {
        temperature,
        withEntropy,
        chunkBytes: bytesFor(cols, N, C),
      });
      if (withEntropy) {
        backward([out.logProbs, out.entropy!], [Tensor.from(gLp, [N]), Tensor.from(gEnt, [N])]);
      } else backward(out.logProbs, Tensor.from(gLp, [N]));
      const ref = lmHeadLogprobBackwardRef(h, w, ts, gLp, withEntropy ? gEnt : null, {
        temperature,
      });
      const label = `N=${N} C=${C} V=${V} cols=${cols} H=${withEntropy}`;
      assertClose(await ht.grad!.toArray(), ref.dHidden, { atol: 3e-5, label: `dh ${label}` });
      assertClose(await wt.grad!.toArray(), ref.dWeight, { atol: 3e-5, label: `dw ${label}` });
    }
  }
});

/**
 * Forward and backward of case [N, C, V, cols] with entropy (inputs drawn from `seed` on), under
 * further options: the statistics, both gradients, and the pool bytes the forward held for the
 * backward and those left after it.
 */
function headRunner([N, C, V, cols]: [number, number, number, number], seed: number) {
  const h = randomArray(N * C, seed, -1, 1), w = randomArray(V * C, seed + 10, -1, 1);
  const ts = Tensor.from(targetsFor(N, V, seed + 20), [N], "i32");
  const gLp = Tensor.from(randomArray(N, seed + 30), [N]);
  const gEnt = Tensor.from(randomArray(N, seed + 40), [N]);
  return async (o: LmHeadLogprobOptions) => {
    const ht = Tensor.from(h, [N, C]), wt = Tensor.from(w, [V, C]);
    ht.requiresGrad = wt.requiresGrad = true;
    const before = gpu().pool.inUseBytes;
    const out = lmHeadLogprob(ht, wt, ts, {
      withEntropy: true,
      chunkBytes: bytesFor(cols, N, C),
      ...o,
    });
    const held = gpu().pool.inUseBytes - before;
    const stats = [await out.logProbs.toArray(), await out.entropy!.toArray()];
    backward([out.logProbs, out.entropy!], [gLp, gEnt]);
    const [dh, dw] = [await ht.grad!.toArray(), await wt.grad!.toArray()];
    for (const t of [ht, wt, ht.grad!, wt.grad!, out.logProbs, out.entropy!]) t.dispose();
    return { stats, dh, dw, held, left: gpu().pool.inUseBytes - before };
  };
}

gpuTest(
  "keepBytes: kept logits give the recomputed gradients bit for bit, then are freed",
  async () => {
    for (const [i, [N, C, V, cols]] of CASES.slice(1).entries()) {
      const run = headRunner([N, C, V, cols], 140 + i);
      const label = `N=${N} C=${C} V=${V} cols=${cols}`;
      const recomputed = await run({ keepBytes: 0 }), kept = await run({ keepBytes: N * V * 4 });
      const over = await run({ keepBytes: N * V * 4 - 4 });
      for (const r of [kept, over]) {
        assert.deepEqual([r.dh, r.dw], [recomputed.dh, recomputed.dw], `bit for bit ${label}`);
      }
      assert.ok(kept.held >= recomputed.held + N * V * 4, `the forward holds the logits ${label}`);
      assert.equal(over.held, recomputed.held, `over the budget nothing is kept ${label}`);
      assert.equal(kept.left, recomputed.left, `the backward frees what it kept ${label}`);
    }
  },
);

gpuTest(
  "chunkGroup: kept logits in groups of chunks give one chunk at a time's results",
  async () => {
    // [case, chunks per group]: groups of 3 and 1 then the short chunk; 4 of 2; 3 then the short
    const groups = [3, 2, 3];
    for (const [i, [N, C, V, cols]] of CASES.slice(1).entries()) {
      const run = headRunner([N, C, V, cols], 240 + i);
      const label = `N=${N} C=${C} V=${V} cols=${cols} group=${groups[i]}`;
      const keepBytes = N * V * 4;
      const one = await run({ keepBytes, chunkGroup: 1 });
      const grouped = await run({ keepBytes, chunkGroup: groups[i] });
      // The same products per chunk: statistics and d weight bit for bit; d hidden sums the
      // group's products before adding them to the rest, which rounds differently.
      assert.deepEqual(grouped.stats, one.stats, label);
      assert.deepEqual(grouped.dw, one.dw, label);
      assertClose(grouped.dh, one.dh, { atol: 1e-5, rtol: 1e-5, label });
    }
    const x = Tensor.from(randomArray(8, 1), [2, 4]),
      wt = Tensor.from(randomArray(800, 2), [200, 4]);
    x.requiresGrad = true;
    const bad = { keepBytes: 1e9, chunkBytes: bytesFor(64, 2, 4), chunkGroup: 9 };
    assert.throws(
      () => lmHeadLogprob(x, wt, Tensor.from([1, 2], [2], "i32"), bad),
      /chunkGroup must be 1 to 8, got 9/,
    );
  },
);

gpuTest("lmHeadLogprob backward reference agrees with finite differences", () => {
  const N = 3, C = 4, V = 9, temperature = 0.8;
  const h = randomArray(N * C, 90, -1, 1), w = randomArray(V * C, 91, -1, 1);
  const ts = Int32Array.from([4, -100, 8]);
  const gLp = randomArray(N, 92), gEnt = randomArray(N, 93);
  const loss = (hh: ArrayLike<number>, ww: ArrayLike<number>) => {
    const r = lmHeadLogprobRef(hh, ww, ts, { temperature, chunk: 4 });
    let s = 0;
    for (let n = 0; n < N; n++) s += gLp[n] * r.logProbs[n] + gEnt[n] * r.entropy[n];
    return s;
  };
  const ref = lmHeadLogprobBackwardRef(h, w, ts, gLp, gEnt, { temperature });
  assertClose(ref.dHidden, finiteDiff((x) => loss(x, w), h, 1e-5), { atol: 1e-7, rtol: 1e-5 });
  assertClose(ref.dWeight, finiteDiff((x) => loss(h, x), w, 1e-5), { atol: 1e-7, rtol: 1e-5 });
});

gpuTest("tied embeddings: the table's gradient adds the head's and the gather's", async () => {
  const B = 2, T = 5, C = 8, V = 150, N = B * T;
  const table = randomArray(V * C, 100, -1, 1);
  const ids = Int32Array.from({ length: N }, (_, i) => (i * 37) % V);
  const ts = targetsFor(N, V, 101);
  const gLp = randomArray(N, 102), gEnt = randomArray(N, 103);
  const run = async (chunked: boolean) => {
    const wt = Tensor.from(table, [V, C]);
    wt.requiresGrad = true;
    const h = embedding(Tensor.from(ids, [B, T], "i32"), wt); // [B, T, C]
    const targets = Tensor.from(ts, [B, T], "i32");
    const out = chunked
      ? lmHeadLogprob(h, wt, targets, {
        withEntropy: true,
        temperature: 0.9,
        chunkBytes: 64 * 4 * N,
      })
      : logprobEntropy(linear(h, wt), targets, { withEntropy: true, temperature: 0.9 });
    backward([out.logProbs, out.entropy!], [Tensor.from(gLp, [B, T]), Tensor.from(gEnt, [B, T])]);
    return { lp: await out.logProbs.toArray(), grad: await wt.grad!.toArray() };
  };
  const chunked = await run(true), whole = await run(false);
  assertClose(chunked.lp, whole.lp, { atol: 2e-5, label: "log-probs" });
  assertClose(chunked.grad, whole.grad, { atol: 2e-5, label: "tied table gradient" });
  // the gradient differs from the head's alone: the gather's part is there
  const headOnly = lmHeadLogprobBackwardRef(
    await embedding(Tensor.from(ids, [N], "i32"), Tensor.from(table, [V, C])).toArray(),
    table,
    ts,
    gLp,
    gEnt,
    { temperature: 0.9 },
  ).dWeight;
  let diff = 0;
  chunked.grad.forEach((g, k) => diff = Math.max(diff, Math.abs(g - headOnly[k])));
  assert.ok(diff > 1e-3, `gather gradient missing (max difference ${diff})`);
});

gpuTest("lmHeadLogprob rejects bad shapes, naming them", () => {
  const h = Tensor.empty([4, 8]), w = Tensor.empty([10, 8]);
  assert.throws(
    () => lmHeadLogprob(h, w, Tensor.empty([3], "i32")),
    /one target per hidden row, got hidden \[4, 8\] f32, weight \[10, 8\] f32, targets \[3\] i32/,
  );
  assert.throws(
    () => lmHeadLogprob(h, Tensor.empty([10, 7]), Tensor.empty([4], "i32")),
    /end in C/,
  );
  assert.throws(() => lmHeadLogprob(h, w, Tensor.empty([4], "i32"), { temperature: 0 }), /> 0/);
});
