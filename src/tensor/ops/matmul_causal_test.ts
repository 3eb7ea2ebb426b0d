import assert from "node:assert/strict";
import { gpuTest, randomArray } from "../../testing/mod.ts";
import { Tensor } from "../tensor.ts";
import {
  type CausalBlocks,
  type Gemm,
  gemm,
  type TileName,
  TILES,
  tileShape,
} from "./matmul_kernel.ts";

// Causal attention's products (matmul_kernel.ts's CausalBlocks): packed rows (g, t) of G heads of
// T query positions, keys 0 .. L - 1, query t seeing keys up to off + t.
const NB = 2, G = 2, D = 64, BK = 8;

interface Case {
  T: number;
  L: number;
  tile: TileName;
}

const CASES: Case[] = [
  { T: 100, L: 100, tile: "medium" }, // 64-row blocks wrap into the next head
  { T: 100, L: 140, tile: "medium" }, // queries after a 40-key prefix
  { T: 136, L: 136, tile: "large" },
];

const visible = (c: Case, row: number, key: number) => key <= c.L - c.T + (row % c.T);

/** The last key the rows m0 .. m0 + bm - 1 see (the shader's causal_reach). */
function reach(c: Case, m0: number, bm: number): number {
  const t0 = m0 % c.T;
  return c.L - c.T + (t0 + bm <= c.T ? t0 + bm - 1 : c.T - 1);
}

/** Scores-like P [NB, G * T, L]: random where visible, exactly 0 where masked. */
function masked(c: Case, seed: number): Float32Array {
  const rows = G * c.T;
  const p = randomArray(NB * rows * c.L, seed);
  for (let i = 0; i < p.length; i++) {
    if (!visible(c, Math.floor(i / c.L) % rows, i % c.L)) p[i] = 0;
  }
  return p;
}

async function run(a: Float32Array, b: Float32Array, d: Gemm, tile: TileName, fill = 0) {
  const A = Tensor.from(a, [a.length]), B = Tensor.from(b, [b.length]);
  const out = Tensor.from(new Float32Array(d.batch * d.m * d.n).fill(fill), [d.batch, d.m, d.n]);
  gemm(A, B, out, d, { tile });
  const got = Float32Array.from(await out.toArray());
  for (const t of [A, B, out]) t.dispose();
  return got;
}

/** Equal values (+0 and -0 alike) at every index where `where` holds; returns how many. */
function sameWhere(
  got: Float32Array,
  want: Float32Array,
  where: (i: number) => boolean,
  what: string,
) {
  let n = 0;
  for (let i = 0; i < want.length; i++) {
    if (!where(i)) continue;
    if (got[i] !== want[i]) assert.fail(`${what}: index ${i}: ${got[i]} vs ${want[i]}`);
    n++;
  }
  return n;
}

const causalOf = (c: Case, kind: CausalBlocks["kind"]): CausalBlocks => ({
  kind,
  period: c.T,
  off: c.L - c.T,
});

gpuTest(
  "causal scores: blocks past their rows' reach are left unwritten, the rest computed",
  async () => {
    for (const c of CASES) {
      const rows = G * c.T, { bm, bn } = tileShape(TILES[c.tile]);
      const d: Gemm = {
        batch: NB,
        m: rows,
        n: c.L,
        k: D,
        transA: false,
        transB: true,
        strideA: rows * D,
        strideB: c.L * D,
      };
      const q = randomArray(NB * rows * D, 1), k = randomArray(NB * c.L * D, 2);
      const want = await run(q, k, d, c.tile);
      const got = await run(q, k, { ...d, causal: causalOf(c, "scores") }, c.tile, NaN);
      const skipped = (i: number) => {
        const row = Math.floor(i / c.L) % rows, key = i % c.L;
        return Math.floor(key / bn) * bn > reach(c, Math.floor(row / bm) * bm, bm);
      };
      const kept = sameWhere(got, want, (i) => !skipped(i), `${JSON.stringify(c)} kept blocks`);
      const left = got.filter((_, i) => skipped(i));
      assert.ok(
        left.length > 0 && left.every(Number.isNaN),
        `${JSON.stringify(c)}: skipped blocks`,
      );
      assert.ok(kept > 0);
    }
  },
);

gpuTest(
  "causal P V: each row block's K range ends at its reach (past it P is never read)",
  async () => {
    for (const c of CASES) {
      const rows = G * c.T, { bm } = tileShape(TILES[c.tile]);
      const d: Gemm = {
        batch: NB,
        m: rows,
        n: D,
        k: c.L,
        transA: false,
        transB: false,
        strideA: rows * c.L,
        strideB: c.L * D,
      };
      const p = masked(c, 3), v = randomArray(NB * c.L * D, 4);
      const want = await run(p, v, d, c.tile);
      // NaN where the rule says K has ended: read, it would spread to the row's outputs.
      const poisoned = p.map((x, i) => {
        const row = Math.floor(i / c.L) % rows, key = i % c.L;
        const end = Math.ceil((reach(c, Math.floor(row / bm) * bm, bm) + 1) / BK) * BK;
        return key >= end ? NaN : x;
      });
      assert.ok(poisoned.some(Number.isNaN), `${JSON.stringify(c)}: some K is skipped`);
      const got = await run(poisoned, v, { ...d, causal: causalOf(c, "byKeys") }, c.tile);
      sameWhere(got, want, () => true, `${JSON.stringify(c)} P V`);
    }
  },
);

gpuTest(
  "causal P^T dO: each key block's K range starts at the first row that sees it",
  async () => {
    for (const c of CASES) {
      const { bm } = tileShape(TILES[c.tile]);
      // per head: [T, L]^T @ [T, D] -> [L, D], one batch entry per (pair, head)
      const d: Gemm = {
        batch: NB * G,
        m: c.L,
        n: D,
        k: c.T,
        transA: true,
        transB: false,
        strideA: c.T * c.L,
        strideB: c.T * D,
      };
      const p = masked(c, 5), dout = randomArray(NB * G * c.T * D, 6);
      const want = await run(p, dout, d, c.tile);
      const poisoned = p.map((x, i) => {
        const t = Math.floor(i / c.L) % c.T, key = i % c.L;
        const start = Math.floor(Math.max(Math.floor(key / bm) * bm - (c.L - c.T), 0) / BK) * BK;
        return t < start ? NaN : x;
      });
      assert.ok(poisoned.some(Number.isNaN), `${JSON.stringify(c)}: some K is skipped`);
      const got = await run(poisoned, dout, { ...d, causal: causalOf(c, "keySide") }, c.tile);
      sameWhere(got, want, () => true, `${JSON.stringify(c)} P^T dO`);
    }
  },
);

gpuTest("causal blocks: bad settings are errors", () => {
  const a = Tensor.from(new Float32Array(64), [64]), out = Tensor.empty([8, 8], "f32", "o");
  const d: Gemm = {
    batch: 1,
    m: 8,
    n: 8,
    k: 8,
    transA: true,
    transB: false,
    strideA: 0,
    strideB: 0,
  };
  assert.throws(
    () => gemm(a, a, out, { ...d, causal: { kind: "keySide", period: 4, off: 0 } }),
    /keySide runs K over one head's 4 rows, got K 8/,
  );
  assert.throws(
    () => gemm(a, a, out, { ...d, causal: { kind: "scores", period: 0, off: 0 } }),
    /causal blocks need a whole period > 0/,
  );
  for (const t of [a, out]) t.dispose();
});
