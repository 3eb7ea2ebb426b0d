import assert from "node:assert/strict";
import { gaeScan } from "../advantage.ts";
import { assertClose, gpuTest, randomArray, rng } from "../../testing/mod.ts";
import { Tensor } from "../../tensor/mod.ts";
import { gae } from "./gae.ts";

/**
 * A response mask [B, R] with ragged lengths, a hole (tool output) in the middle of some rows and
 * all-padding rows.
 */
function raggedMask(B: number, R: number, seed: number): Int32Array {
  const r = rng(seed);
  const m = new Int32Array(B * R);
  for (let b = 0; b < B; b++) {
    if (b % 5 === 3) continue; // all padding
    const len = 1 + Math.floor(r() * R);
    const holeAt = Math.floor(r() * len), holeLen = r() < 0.5 ? Math.floor(r() * 3) : 0;
    for (let t = 0; t < len; t++) m[b * R + t] = t >= holeAt && t < holeAt + holeLen ? 0 : 1;
  }
  return m;
}

// B across the 64-wide workgroup (1, 70), R = 1 and odd lengths.
const SHAPES: [number, number][] = [[1, 1], [3, 7], [70, 13], [5, 64]];

gpuTest("gae matches gaeScan on ragged masks (i32, f32 and u32 masks)", async () => {
  for (const [i, [B, R]] of SHAPES.entries()) {
    const rewards = randomArray(B * R, 10 + i, -1, 1);
    const values = randomArray(B * R, 20 + i, -2, 2);
    const mask = raggedMask(B, R, 30 + i);
    const opts = i % 2 ? { gamma: 0.99, lam: 0.95 } : { gamma: 1, lam: 1 };
    const ref = gaeScan(rewards, values, mask, R, opts);
    for (const dtype of ["i32", "f32", "u32"] as const) {
      const out = gae(
        Tensor.from(rewards, [B, R]),
        Tensor.from(values, [B, R]),
        Tensor.from(mask, [B, R], dtype),
        opts,
      );
      const label = `[${B}, ${R}] ${dtype}`;
      assertClose(await out.advantages.toArray(), ref.advantages, {
        atol: 1e-5,
        label: `adv ${label}`,
      });
      assertClose(await out.returns.toArray(), ref.returns, { atol: 1e-5, label: `ret ${label}` });
    }
  }
});

gpuTest("gae: masked positions carry value and advantage through a hole", async () => {
  // one row: valid, hole, valid; gamma = lam = 1 -> A_2 = r2 - v2; A_1 = A_2 (carried);
  // A_0 = r0 + v2 - v0 + A_2
  const r = [1, 100, 2], v = [0.5, 7, 0.25], m = [1, 0, 1];
  const out = gae(Tensor.from(r, [1, 3]), Tensor.from(v, [1, 3]), Tensor.from(m, [1, 3], "i32"));
  const a2 = 2 - 0.25, a0 = 1 + 0.25 - 0.5 + a2;
  assertClose(await out.advantages.toArray(), [a0, a2, a2]);
  assertClose(await out.returns.toArray(), [a0 + 0.5, a2 + 7, a2 + 0.25]);
});

gpuTest("gae rejects mismatched shapes and dtypes, naming them", () => {
  const x = Tensor.empty([2, 3]);
  assert.throws(
    () => gae(x, Tensor.empty([2, 4]), Tensor.empty([2, 3], "i32")),
    /gae: .*rewards \[2, 3\] f32, values \[2, 4\] f32, mask \[2, 3\] i32/,
  );
  assert.throws(
    () => gae(x, Tensor.empty([2, 3], "i32"), Tensor.empty([2, 3], "i32")),
    /gae: expected f32 rewards and values.*values \[2, 3\] i32/,
  );
  assert.throws(() => gae(Tensor.empty([6]), Tensor.empty([6]), Tensor.empty([6])), /\[B, R\]/);
});
