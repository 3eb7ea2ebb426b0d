import assert from "node:assert/strict";
import { computeActorLoss } from "../actor_loss.ts";
import type { LossAggMode } from "../agg.ts";
import { computeValueLoss } from "../value_loss.ts";
import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward } from "../../tensor/mod.ts";
import { logprobEntropyBackwardRef, logprobEntropyRef } from "../../tensor/mod.ts";
import { Tensor } from "../../tensor/mod.ts";
import { logprobEntropy } from "../../tensor/mod.ts";
import { POLICY_LOSS_STATS, ppoPolicyLoss, type PpoPolicyLossOptions } from "./ppo_loss.ts";
import { VALUE_LOSS_STATS, valueLoss, type ValueLossOptions } from "./ppo_loss_value.ts";
import { count, poison, raggedMask } from "./test_inputs.ts";

interface Case {
  shape: [number, number];
  opts: PpoPolicyLossOptions & { maskF32?: boolean };
}

const MODES: LossAggMode[] = [
  "token-mean",
  "seq-mean-token-sum",
  "seq-mean-token-mean",
  "seq-mean-token-sum-norm",
];
// B across nothing in particular, R around the 128-wide workgroup; every mode, every KL type.
const CASES: Case[] = [
  { shape: [1, 1], opts: {} },
  { shape: [3, 5], opts: { lossAggMode: "seq-mean-token-mean", entropyCoeff: 0.01 } },
  { shape: [7, 130], opts: { lossAggMode: "seq-mean-token-sum", useKlLoss: true, maskF32: true } },
  {
    shape: [6, 33],
    opts: { lossAggMode: "seq-mean-token-sum-norm", useKlLoss: true, klLossType: "kl" },
  },
  {
    shape: [5, 17],
    opts: { clipRatioLow: 0.1, clipRatioHigh: 0.28, useKlLoss: true, klLossType: "abs" },
  },
  { shape: [4, 9], opts: { useKlLoss: true, klLossType: "mse", klLossCoef: 0.1 } },
  { shape: [4, 9], opts: { useKlLoss: true, klLossType: "low_var_kl+", entropyCoeff: 0.02 } },
  {
    shape: [5, 12],
    opts: { useKlLoss: true, klLossType: "k1+", lossAggMode: "seq-mean-token-mean" },
  },
  { shape: [3, 20], opts: { lossAggMode: "seq-mean-token-sum-norm", lossScaleFactor: 7 } },
  { shape: [6, 8], opts: { dpSize: 2, lossAggMode: "seq-mean-token-sum" } },
];

gpuTest("ppoPolicyLoss matches computeActorLoss: loss, stats and gradients", async () => {
  for (const [k, { shape: [B, R], opts }] of CASES.entries()) {
    const n = B * R, mask = raggedMask(B, R, 10 + k);
    // batch-wide denominators on every other case, as micro-batches of a mini-batch use them
    const global = k % 2 === 1 || (opts.dpSize ?? 1) > 1
      ? { batchNumTokens: count(mask) + 3, globalBatchSize: B + 2 }
      : {};
    const old = randomArray(n, 20 + k, -3, -0.1);
    // log-ratio spread: inside the clip range, past dual-clip's c = 3, past the +-20 clamp
    const spread = k === 9 ? 30 : k % 3 === 0 ? 2.5 : 0.6;
    const lp = old.map((v, i) => v + spread * randomArray(n, 30 + k)[i]);
    const adv = randomArray(n, 40 + k, -2, 2);
    const ent = randomArray(n, 50 + k, 0, 3);
    const ref = old.map((v, i) => v + randomArray(n, 60 + k)[i]);
    const o = { ...opts, ...global };
    const cpu = computeActorLoss({
      R,
      logProb: lp,
      oldLogProb: old,
      advantages: adv,
      responseMask: mask,
      entropy: ent,
      refLogProb: ref,
    }, o);
    const logProb = Tensor.from(poison(lp, mask), [B, R]);
    const entropy = Tensor.from(poison(ent, mask), [B, R]);
    logProb.requiresGrad = true;
    entropy.requiresGrad = true;
    const out = ppoPolicyLoss(
      logProb,
      Tensor.from(poison(old, mask), [B, R]),
      Tensor.from(poison(adv, mask), [B, R]),
      Tensor.from(mask, [B, R], opts.maskF32 ? "f32" : "i32"),
      { ...o, entropy, refLogProb: Tensor.from(poison(ref, mask), [B, R]) },
    );
    const label = `case ${k} [${B}, ${R}] ${opts.lossAggMode ?? "token-mean"}`;
    const stats = await out.stats.toArray();
    if (spread > 1 && n > 1) assert.ok(cpu.metrics["actor/pg_clipfrac_lower"] > 0, "dual clip");
    const expected = POLICY_LOSS_STATS.map((name) => cpu.metrics[name] ?? 0);
    assertClose(stats, expected, { atol: 1e-5, rtol: 1e-4, label: `stats ${label}` });
    assertClose(await out.loss.toArray(), [cpu.loss], { atol: 1e-5, rtol: 1e-4, label });
    backward(out.loss, Tensor.from([2.5], [1])); // a seed other than 1 must scale the gradients
    const gl = await logProb.grad!.toArray();
    assertClose(gl, cpu.gradLogProb.map((g) => 2.5 * g), { atol: 1e-6, label: `dlogp ${label}` });
    if (opts.entropyCoeff) {
      const ge = await entropy.grad!.toArray();
      assertClose(ge, cpu.gradEntropy!.map((g) => 2.5 * g), { atol: 1e-7, label: `dent ${label}` });
    } else assert.equal(entropy.grad, null, "no entropy gradient without entropyCoeff");
  }
});

gpuTest("valueLoss matches computeValueLoss in every aggregation mode", async () => {
  const shapes: [number, number][] = [[1, 1], [5, 7], [9, 130], [4, 31]];
  for (const [k, [B, R]] of shapes.entries()) {
    for (const [j, mode] of MODES.entries()) {
      const n = B * R, mask = raggedMask(B, R, 70 + k);
      const values = randomArray(n, 80 + k, -1, 1);
      const vpreds = values.map((v, i) => v + randomArray(n, 90 + k)[i]);
      const returns = randomArray(n, 100 + k, -2, 2);
      const o: ValueLossOptions = { lossAggMode: mode, cliprangeValue: 0.3 };
      if (j % 2) Object.assign(o, { batchNumTokens: count(mask) + 1, globalBatchSize: B + 1 });
      const cpu = computeValueLoss({ R, vpreds, values, returns, responseMask: mask }, o);
      const v = Tensor.from(poison(vpreds, mask), [B, R]);
      v.requiresGrad = true;
      const out = valueLoss(
        v,
        Tensor.from(poison(values, mask), [B, R]),
        Tensor.from(poison(returns, mask), [B, R]),
        Tensor.from(mask, [B, R], j === 2 ? "u32" : "i32"),
        o,
      );
      const label = `[${B}, ${R}] ${mode}`;
      const expected = VALUE_LOSS_STATS.map((name) => cpu.metrics[name]);
      assertClose(await out.stats.toArray(), expected, { atol: 1e-5, label: `stats ${label}` });
      assertClose(await out.loss.toArray(), [cpu.vfLoss], { atol: 1e-5, label });
      backward(out.loss);
      assertClose(await v.grad!.toArray(), cpu.gradVpreds, { atol: 1e-6, label: `dv ${label}` });
    }
  }
});

gpuTest("logits -> logprobEntropy -> ppoPolicyLoss -> backward reaches the logits", async () => {
  const B = 2, R = 3, V = 11, N = B * R;
  const xs = randomArray(N * V, 500, -2, 2);
  const targets = Int32Array.from([1, 4, -100, 10, 0, -100]);
  const mask = Int32Array.from([1, 1, 0, 1, 0, 0]); // a hole, then padding
  const old = randomArray(N, 501, -3, -2), adv = randomArray(N, 502, -1, 1);
  const opts = { lossAggMode: "seq-mean-token-mean" as const, entropyCoeff: 0.05, clipRatio: 0.1 };
  const x = Tensor.from(xs, [B, R, V]);
  x.requiresGrad = true;
  // targets [B, R] give [B, R] outputs, so the losses take them without a (tape-less) reshape
  const lpe = logprobEntropy(x, Tensor.from(targets, [B, R], "i32"), { withEntropy: true });
  assert.deepEqual(lpe.logProbs.shape, [B, R]);
  const out = ppoPolicyLoss(
    lpe.logProbs,
    Tensor.from(old, [B, R]),
    Tensor.from(adv, [B, R]),
    Tensor.from(mask, [B, R], "i32"),
    { ...opts, entropy: lpe.entropy! },
  );
  backward(out.loss);
  const ref = logprobEntropyRef(xs, targets);
  const cpu = computeActorLoss({
    R,
    logProb: Float32Array.from(ref.logProbs),
    oldLogProb: old,
    advantages: adv,
    responseMask: mask,
    entropy: Float32Array.from(ref.entropy),
  }, opts);
  assertClose(await out.loss.toArray(), [cpu.loss], { atol: 1e-5 });
  const dref = logprobEntropyBackwardRef(xs, targets, cpu.gradLogProb, cpu.gradEntropy);
  assertClose(await x.grad!.toArray(), dref, { atol: 1e-6, label: "dlogits" });
});

gpuTest("ppoPolicyLoss and valueLoss reject bad inputs, naming shapes and dtypes", () => {
  const t = (shape: number[], dtype: "f32" | "i32" = "f32") => Tensor.empty(shape, dtype);
  const m = t([2, 3], "i32");
  assert.throws(
    () => ppoPolicyLoss(t([2, 3]), t([2, 4]), t([2, 3]), m),
    /ppoPolicyLoss: .*logProb \[2, 3\] f32, oldLogProb \[2, 4\] f32, advantages \[2, 3\] f32, mask \[2, 3\] i32/,
  );
  assert.throws(
    () => ppoPolicyLoss(t([2, 3]), t([2, 3], "i32"), t([2, 3]), m),
    /ppoPolicyLoss: expected f32 inputs.*oldLogProb \[2, 3\] i32/,
  );
  assert.throws(() => ppoPolicyLoss(t([6]), t([6]), t([6]), t([6])), /one shape \[B, R\]/);
  assert.throws(
    () => ppoPolicyLoss(t([2, 3]), t([2, 3]), t([2, 3]), m, { entropy: t([3, 2]) }),
    /entropy \[3, 2\] f32/,
  );
  assert.throws(
    () => ppoPolicyLoss(t([2, 3]), t([2, 3]), t([2, 3]), m, { useKlLoss: true }),
    /useKlLoss needs refLogProb/,
  );
  assert.throws(
    () => ppoPolicyLoss(t([2, 3]), t([2, 3]), t([2, 3]), m, { entropyCoeff: 0.1 }),
    /entropyCoeff != 0 needs the entropy/,
  );
  const ref = t([2, 3]);
  assert.throws(
    () =>
      ppoPolicyLoss(t([2, 3]), t([2, 3]), t([2, 3]), m, {
        useKlLoss: true,
        refLogProb: ref,
        klLossType: "k9",
      }),
    /k9/,
  );
  assert.throws(
    () => ppoPolicyLoss(t([2, 3]), t([2, 3]), t([2, 3]), m, { clipRatioC: 1 }),
    /clip_ratio_c must be > 1/,
  );
  assert.throws(
    () => ppoPolicyLoss(t([2, 3]), t([2, 3]), t([2, 3]), m, { lossAggMode: "sum" as "token-mean" }),
    /unknown loss_agg_mode "sum"/,
  );
  assert.throws(
    () => ppoPolicyLoss(t([2, 3]), t([2, 3]), t([2, 3]), m, { dpSize: 2 }),
    /dpSize > 1 needs the global batchNumTokens/,
  );
  assert.throws(
    () => valueLoss(t([2, 3]), t([2, 3]), t([2, 3]), t([2, 2], "i32")),
    /valueLoss: .*vpreds \[2, 3\] f32, values \[2, 3\] f32, returns \[2, 3\] f32, mask \[2, 2\] i32/,
  );
  assert.throws(
    () => valueLoss(t([2, 3]), t([2, 3]), t([2, 3], "i32"), m),
    /valueLoss: expected f32 inputs.*returns \[2, 3\] i32/,
  );
});
