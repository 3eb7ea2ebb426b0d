import assert from "node:assert/strict";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { gpu } from "../../gpu/mod.ts";
import { noGrad } from "../grad_mode.ts";
import { roundToF16 } from "../half.ts";
import { Tensor } from "../tensor.ts";
import { swigluLinearRef } from "../ref/swiglu.ts";
import { TILES } from "./matmul_kernel.ts";
import { swigluWoven } from "./swiglu_woven.ts";

interface Case {
  m: number;
  n: number;
  k: number;
  half: boolean;
  biases: "both" | "gate" | "none";
  splits: number;
  tile?: "wide";
}

async function check(c: Case): Promise<void> {
  const { m, n, k } = c;
  const w = (seed: number) => {
    const a = randomArray(n * k, seed);
    return c.half ? a.map(roundToF16) : a;
  };
  const x = randomArray(m * k, 1), wg = w(2), wu = w(3);
  const bg = c.biases !== "none" ? randomArray(n, 4) : null;
  const bu = c.biases === "both" ? randomArray(n, 5) : null;
  const dtype = c.half ? "f16" : "f32";
  const t = (a: Float32Array | null, shape: number[]) =>
    a ? Tensor.from(a, shape, shape.length === 2 && shape[1] === k ? dtype : "f32") : null;
  const d0 = gpu().recorder.dispatches;
  const y = noGrad(() =>
    swigluWoven(Tensor.from(x, [m, k]), t(wg, [n, k])!, t(wu, [n, k])!, {
      biasGate: t(bg, [n]),
      biasUp: t(bu, [n]),
      splits: c.splits,
      tile: c.tile,
    })
  );
  const label = JSON.stringify(c);
  assert.equal(gpu().recorder.dispatches - d0, c.splits > 1 ? 2 : 1, `dispatches ${label}`);
  assert.deepEqual(y.shape, [m, n]);
  const want = swigluLinearRef(x, { gate: wg, up: wu }, {
    m,
    n,
    k,
    biasGate: bg ?? undefined,
    biasUp: bu ?? undefined,
  });
  assertClose(await y.toArray(), want, { atol: 1e-4, rtol: 1e-4, label });
}

gpuTest("swigluWoven against the CPU reference: ragged rows, units and K, splits", async () => {
  // The CPU adapter's 64 x 64 blocks weave groups of 32 units; 100 units end inside the fourth
  // group, 70 rows inside the second block, K = 36 inside a K step and K = 30 reads scalars.
  const cases: Case[] = [
    { m: 6, n: 40, k: 64, half: false, biases: "both", splits: 1 },
    { m: 70, n: 100, k: 36, half: true, biases: "gate", splits: 1 },
    { m: 70, n: 100, k: 36, half: false, biases: "none", splits: 3 },
    { m: 5, n: 64, k: 30, half: false, biases: "both", splits: 2 },
    { m: 9, n: 33, k: 48, half: true, biases: "both", splits: 4 },
  ];
  for (const c of cases) await check(c);
});

gpuTest("swigluWoven with the GPU's 64 x 128 blocks (groups of 64 units)", async () => {
  await check({ m: 6, n: 72, k: 32, half: false, biases: "both", splits: 1, tile: "wide" });
  await check({ m: 6, n: 72, k: 32, half: true, biases: "none", splits: 2, tile: "wide" });
});

gpuTest("swigluWoven refuses operands and tiles that do not fit, naming them", () => {
  const x = Tensor.from(randomArray(8, 1), [2, 4]), w = Tensor.from(randomArray(8, 2), [2, 4]);
  assert.throws(
    () => noGrad(() => swigluWoven(x, w, w, { tile: TILES.small })),
    /swigluWoven: the tile needs 8 columns a thread, got \{"wgX":8,"wgY":8,"tm":4,"tn":4/,
  );
  const w3 = Tensor.from(randomArray(12, 3), [3, 4]);
  assert.throws(
    () => swigluWoven(x, w, w3),
    new RegExp(
      "swigluWoven: w_gate and w_up must be the same 2-D \\[N, K\\] of one type; " +
        "got x \\[2, 4\\] f32, w_gate \\[2, 4\\] f32, w_up \\[3, 4\\] f32",
    ),
  );
  assert.throws(
    () => swigluWoven(Tensor.from(randomArray(6, 1), [2, 3]), w, w),
    /swigluWoven: x must end in K = 4; got x \[2, 3\] f32/,
  );
  const b32 = Tensor.from(randomArray(2, 4), [2]), b3 = Tensor.from(randomArray(3, 5), [3]);
  assert.throws(
    () => swigluWoven(x, w, w, { biasGate: b32, biasUp: b3 }),
    /swigluWoven: each bias must be f32 or f16 \[2\];.* bias_gate \[2\] f32, bias_up \[3\] f32/,
  );
  if (gpu().hasF16) {
    const b16 = Tensor.from(randomArray(2, 6), [2], "f16");
    assert.throws(
      () => swigluWoven(x, w, w, { biasGate: b32, biasUp: b16 }),
      /swigluWoven: the two biases must have one type/,
    );
  }
});
