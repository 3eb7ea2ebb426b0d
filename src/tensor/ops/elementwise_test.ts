import assert from "node:assert/strict";
import { gpu } from "../../gpu/mod.ts";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../autograd.ts";
import { Tensor } from "../tensor.ts";
import * as ew from "./elementwise.ts";
import {
  type BinaryOp,
  binaryRef,
  broadcastShapeRef,
  type UnaryOp,
  unaryRef,
} from "../ref/elementwise.ts";

const BINARY: BinaryOp[] = ["add", "sub", "mul", "div", "maximum", "minimum"];
const SHAPES: [number[], number[]][] = [
  [[3, 1, 5], [4, 5]],
  [[2, 3], []],
  [[], [7]],
  [[], []],
  [[37], [37]],
  [[300], [1]],
  [[2, 1, 3, 1], [1, 4, 1, 5]],
  [[2, 1, 2, 1, 3, 1], [1, 2, 1, 2, 1, 3]],
];

const size = (s: readonly number[]) => s.reduce((p, d) => p * d, 1);
const dot = (a: ArrayLike<number>, w: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * w[i];
  return s;
};

// Divisors stay away from 0, and the inputs of maximum/minimum on separate grids (never within
// 0.05 of each other), so that finite differences are well conditioned.
function inputs(op: BinaryOp, sa: number[], sb: number[], seed: number) {
  const a = randomArray(size(sa), seed);
  const b = op === "div"
    ? randomArray(size(sb), seed + 1, 0.5, 2)
    : randomArray(size(sb), seed + 1);
  if (op === "maximum" || op === "minimum") {
    a.forEach((v, i) => a[i] = Math.round(v * 10) / 10 + 0.05);
    b.forEach((v, i) => b[i] = Math.round(v * 10) / 10);
  }
  return { a, b };
}

gpuTest("binary ops broadcast like numpy, forward", async () => {
  let seed = 1;
  for (const op of BINARY) {
    for (const [sa, sb] of SHAPES) {
      const { a, b } = inputs(op, sa, sb, seed++);
      const out = ew[op](Tensor.from(a, sa), Tensor.from(b, sb));
      const ref = binaryRef(op, a, sa, b, sb);
      assert.deepEqual(out.shape, ref.shape, `${op} ${sa} ${sb}`);
      assertClose(await out.toArray(), ref.data, { label: `${op} [${sa}] [${sb}]` });
    }
  }
});

gpuTest("binary ops backward sums over broadcast dims (finite differences)", async () => {
  let seed = 100;
  for (const op of BINARY) {
    for (const [sa, sb] of [SHAPES[0], SHAPES[1], SHAPES[6]]) {
      const { a, b } = inputs(op, sa, sb, seed++);
      const shape = broadcastShapeRef(sa, sb);
      const w = randomArray(size(shape), seed++);
      const ta = Tensor.from(a, sa), tb = Tensor.from(b, sb);
      ta.requiresGrad = tb.requiresGrad = true;
      backward(ew[op](ta, tb), Tensor.from(w, shape));
      const fa = finiteDiff((x) => dot(binaryRef(op, x, sa, b, sb).data, w), a);
      const fb = finiteDiff((x) => dot(binaryRef(op, a, sa, x, sb).data, w), b);
      const tol = { atol: 1e-3, rtol: 1e-3 };
      assertClose(await ta.grad!.toArray(), fa, { ...tol, label: `d${op}/da [${sa}] [${sb}]` });
      assertClose(await tb.grad!.toArray(), fb, { ...tol, label: `d${op}/db [${sa}] [${sb}]` });
    }
  }
});

gpuTest("the same tensor on both sides gets both gradients", async () => {
  const x = Tensor.from([1, 2, 3], [3]);
  x.requiresGrad = true;
  backward(ew.mul(x, x), Tensor.from([1, 1, 1], [3]));
  assertClose(await x.grad!.toArray(), [2, 4, 6]);
});

const UNARY: [UnaryOp, number, number, number?][] = [
  ["neg", -2, 2],
  ["exp", -3, 3],
  ["log", 0.2, 3],
  ["sqrt", 0.2, 3],
  ["rsqrt", 0.2, 3],
  ["square", -2, 2],
  ["abs", -2, 2],
  ["sigmoid", -6, 6],
  ["silu", -6, 6],
  ["tanh", -4, 4],
  ["relu", -2, 2],
  ["addScalar", -2, 2, 0.75],
  ["mulScalar", -2, 2, -1.5],
  ["powScalar", -2, 2, 3],
  ["powScalar", -2, 2, 2],
  ["powScalar", 0.2, 2, 0.5],
  ["powScalar", 0.2, 2, -1.5],
];

function unaryGpu(op: UnaryOp, x: Tensor, s: number): Tensor {
  switch (op) {
    case "addScalar":
    case "mulScalar":
    case "powScalar":
      return ew[op](x, s);
    default:
      return ew[op](x);
  }
}

gpuTest("unary and scalar ops, forward and backward", async () => {
  let seed = 200;
  const shape = [5, 67]; // 335 elements: not a multiple of the workgroup
  for (const [op, lo, hi, s = 0] of UNARY) {
    const x = randomArray(size(shape), seed++, lo, hi);
    // Keep clear of the kinks of abs and relu, where finite differences are meaningless.
    if (op === "abs" || op === "relu") x.forEach((v, i) => x[i] = Math.abs(v) < 0.05 ? 0.5 : v);
    const w = randomArray(x.length, seed++);
    const tx = Tensor.from(x, shape);
    tx.requiresGrad = true;
    const y = unaryGpu(op, tx, s);
    assertClose(await y.toArray(), unaryRef(op, x, s), { label: `${op}(${s})`, rtol: 2e-4 });
    backward(y, Tensor.from(w, shape));
    const fd = finiteDiff((v) => dot(unaryRef(op, v, s), w), x);
    assertClose(await tx.grad!.toArray(), fd, { atol: 1e-3, rtol: 1e-3, label: `d${op}(${s})` });
  }
});

gpuTest("sigmoid, silu and tanh stay finite for large inputs", async () => {
  const x = [-200, -90, 90, 200];
  for (const op of ["sigmoid", "silu", "tanh"] as const) {
    const t = Tensor.from(x, [4]);
    t.requiresGrad = true;
    const y = ew[op](t);
    assertClose(await y.toArray(), unaryRef(op, x), { label: op });
    backward(y, Tensor.from([1, 1, 1, 1], [4]));
    const g = await t.grad!.toArray();
    assert.ok(g.every(Number.isFinite), `${op} grad ${g}`);
  }
});

gpuTest("broadcastTo repeats and sums its gradient back", async () => {
  const x = Tensor.from([1, 2, 3], [3, 1]);
  x.requiresGrad = true;
  const y = ew.broadcastTo(x, [2, 3, 4]);
  assertClose(
    await y.toArray(),
    binaryRef("add", [1, 2, 3], [3, 1], new Float32Array(24), [2, 3, 4]).data,
  );
  backward(y, Tensor.from(new Float32Array(24).fill(1), [2, 3, 4]));
  assertClose(await x.grad!.toArray(), [8, 8, 8]);
  assert.throws(
    () => ew.broadcastTo(x, [2, 2]),
    /broadcastTo: \[3, 1\] cannot be broadcast to \[2, 2\]/,
  );
});

gpuTest("cast converts f32 and i32 (and f16 where present)", async () => {
  const x = Tensor.from([1.7, -2.7, 3, 0.2, 100.5], [5]);
  const i = ew.cast(x, "i32");
  assert.equal(i.dtype, "i32");
  assert.deepEqual([...await i.toArray()], [1, -2, 3, 0, 100]);
  assertClose(await ew.cast(i, "f32").toArray(), [1, -2, 3, 0, 100]);
  if (!gpu().hasF16) {
    assert.throws(() => ew.cast(x, "f16"), /cast: cannot cast \[5\] f32 to f16/);
    return;
  }
  const h = ew.cast(x, "f16");
  assertClose(await h.toArray(), [1.7, -2.7, 3, 0.2, 100.5], { rtol: 1e-3 });
  const a = ew.add(h, ew.cast(Tensor.from([1, 1, 1, 1, 1], [5]), "f16"));
  assertClose(await ew.cast(a, "f32").toArray(), [2.7, -1.7, 4, 1.2, 101.5], { rtol: 1e-3 });
});

gpuTest("bad inputs name the op, the shapes and the dtypes", () => {
  const a = Tensor.from(new Float32Array(6), [3, 2]);
  const b = Tensor.from(new Float32Array(8), [4, 2]);
  assert.throws(() => ew.add(a, b), /add: shapes \[3, 2\] and \[4, 2\] do not broadcast/);
  assert.throws(() => ew.maximum(b, a), /maximum: shapes \[4, 2\] and \[3, 2\]/);
  const i = Tensor.from(new Int32Array(6), [3, 2], "i32");
  assert.throws(() => ew.mul(a, i), /mul: expected f32 .* got \[3, 2\] f32 and \[3, 2\] i32/);
  assert.throws(() => ew.exp(i), /exp: expected f32 .* got \[3, 2\] i32/);
  assert.throws(() => ew.powScalar(a, NaN), /powScalar: scalar must be finite/);
});
