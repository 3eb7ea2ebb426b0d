/**
 * The adapted linear layer's joined GEMMs (`loraLinear` without dropout) against the unfused
 * composition x W^T + b + residual + s (x A^T) B^T built from plain ops, and against finite
 * differences of a CPU loss.
 */
import { add, backward, linear, mul, mulScalar, sum, Tensor } from "../tensor/mod.ts";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../testing/mod.ts";
import type { LoraPair } from "./lora.ts";
import { loraLinear } from "./lora_linear.ts";

const tol = { atol: 1e-5, rtol: 1e-4 };
const [B, T, inF, outF, r, s] = [2, 5, 13, 11, 3, 1.5];

function pair(a: Float32Array, b: Float32Array): LoraPair {
  const A = Tensor.from(a, [r, inF]), Bt = Tensor.from(b, [outF, r]);
  A.requiresGrad = Bt.requiresGrad = true;
  return { a: A, b: Bt, scale: s, dropout: 0, dropoutSeed: () => 0 };
}

/** y, dx, dA, dB and d(residual) of sum(y * c) for one way of computing y. */
async function run(
  f: (x: Tensor, w: Tensor, bias: Tensor, p: LoraPair, resid: Tensor) => Tensor,
  wType: "f32" | "f16",
) {
  const x = Tensor.from(randomArray(B * T * inF, 1), [B, T, inF]);
  const w = Tensor.from(randomArray(outF * inF, 2), [outF, inF], wType);
  const bias = Tensor.from(randomArray(outF, 3), [outF]);
  const p = pair(randomArray(r * inF, 4), randomArray(outF * r, 5, -0.5, 0.5));
  const resid = Tensor.from(randomArray(B * T * outF, 6), [B, T, outF]);
  x.requiresGrad = resid.requiresGrad = true;
  const y = f(x, w, bias, p, resid);
  backward(sum(mul(y, Tensor.from(randomArray(B * T * outF, 7), [B, T, outF]))));
  const out = [y, x.grad!, p.a.grad!, p.b.grad!, resid.grad!];
  return await Promise.all(out.map(async (t) => await t.toArray() as Float32Array));
}

const fused = (x: Tensor, w: Tensor, bias: Tensor, p: LoraPair, resid: Tensor) =>
  loraLinear(x, w, bias, p, { residual: resid });
const unfused = (x: Tensor, w: Tensor, bias: Tensor, p: LoraPair, resid: Tensor) =>
  add(linear(x, w, bias, { residual: resid }), mulScalar(linear(linear(x, p.a), p.b), s));
const NAMES = ["y", "dx", "dA", "dB", "dresidual"];

for (const wType of ["f32", "f16"] as const) {
  gpuTest(
    `loraLinear (${wType} W) equals the unfused composition: output and every gradient`,
    async () => {
      const want = await run(unfused, wType), got = await run(fused, wType);
      got.forEach((v, i) => assertClose(v, want[i], { ...tol, label: NAMES[i] }));
    },
    { f16: wType === "f16" },
  );
}

gpuTest("loraLinear's gradients match finite differences of a CPU loss", async () => {
  const N = 4, x = randomArray(N * inF, 11), w = randomArray(outF * inF, 12);
  const a = randomArray(r * inF, 13), b = randomArray(outF * r, 14), c = randomArray(N * outF, 15);
  // L = sum(c * (x W^T + s (x A^T) B^T)), in f64.
  const loss = (xv: ArrayLike<number>, av: ArrayLike<number>, bv: ArrayLike<number>) => {
    let total = 0;
    for (let i = 0; i < N; i++) {
      const low = Array.from({ length: r }, (_, q) => {
        let v = 0;
        for (let k = 0; k < inF; k++) v += xv[i * inF + k] * av[q * inF + k];
        return v;
      });
      for (let o = 0; o < outF; o++) {
        let v = 0;
        for (let k = 0; k < inF; k++) v += xv[i * inF + k] * w[o * inF + k];
        for (let q = 0; q < r; q++) v += s * low[q] * bv[o * r + q];
        total += c[i * outF + o] * v;
      }
    }
    return total;
  };
  const X = Tensor.from(x, [N, inF]), p = pair(a, b);
  X.requiresGrad = true;
  const y = loraLinear(X, Tensor.from(w, [outF, inF]), null, p);
  backward(sum(mul(y, Tensor.from(c, [N, outF]))));
  const fd = { atol: 2e-3, rtol: 2e-3 };
  assertClose(await X.grad!.toArray(), finiteDiff((v) => loss(v, a, b), x), { ...fd, label: "dx" });
  assertClose(await p.a.grad!.toArray(), finiteDiff((v) => loss(x, v, b), a), {
    ...fd,
    label: "dA",
  });
  assertClose(await p.b.grad!.toArray(), finiteDiff((v) => loss(x, a, v), b), {
    ...fd,
    label: "dB",
  });
});
