import { computeValueLoss } from "./value_loss.ts";
import { assertClose, finiteDiff, rng } from "./test_util.ts";

Deno.test("value loss: clipped branch, clip fraction and gradient by hand", () => {
  // c = 0.5, token-mean over 3 valid tokens (w = 1/3):
  //  t0 v=1, old=.8, R=2: v_clip = 1 -> L1 = L2 = 1, unclipped, d = w·(1-2) = -1/3
  //  t1 v=2, old=1, R=0:  v_clip = 1.5 -> L1 = 4, L2 = 2.25 -> 4, unclipped, d = w·2 = 2/3
  //  t2 v=2, old=1, R=3:  v_clip = 1.5 -> L1 = 1, L2 = 2.25 -> 2.25, clipped, d = 0
  //  t3 masked (NaN)
  // vf_loss = 0.5·(1 + 4 + 2.25)/3 = 7.25/6; vf_clipfrac = 1/3; vpred_mean = 5/3
  const out = computeValueLoss({
    R: 2,
    vpreds: new Float64Array([1, 2, 2, NaN]),
    values: new Float64Array([0.8, 1, 1, NaN]),
    returns: new Float64Array([2, 0, 3, NaN]),
    responseMask: new Float32Array([1, 1, 1, 0]),
  }, { cliprangeValue: 0.5 });
  assertClose(out.vfLoss, 7.25 / 6, 1e-12);
  assertClose(out.vfClipfrac, 1 / 3);
  assertClose(out.gradVpreds, [-1 / 3, 2 / 3, 0, 0], 1e-12);
  assertClose(out.metrics["critic/vpred_mean"], 5 / 3, 1e-12);
  assertClose(out.metrics["critic/vf_loss"], out.vfLoss, 0);
});

Deno.test("value loss: gradient matches finite differences in every agg mode (f64)", () => {
  const r = rng(4), R = 4, B = 3, n = R * B;
  const values = new Float64Array(n).map(() => r() * 2);
  const base = values.map((v) => v + (r() * 2 - 1)); // some inside, some outside ±0.3
  const inputs = {
    R,
    values,
    returns: new Float64Array(n).map(() => r() * 3 - 1),
    responseMask: new Float32Array(n).map(() => (r() < 0.8 ? 1 : 0)),
  };
  for (
    const lossAggMode of [
      "token-mean",
      "seq-mean-token-sum",
      "seq-mean-token-mean",
      "seq-mean-token-sum-norm",
    ] as const
  ) {
    const o = { cliprangeValue: 0.3, lossAggMode };
    const out = computeValueLoss({ ...inputs, vpreds: base }, o);
    const fd = finiteDiff((v) => computeValueLoss({ ...inputs, vpreds: v }, o).vfLoss, base);
    assertClose(out.gradVpreds, fd, 1e-6, lossAggMode);
  }
});
