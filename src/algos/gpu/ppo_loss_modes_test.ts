/**
 * Every policy loss the config accepts, on the GPU, against the CPU reference (computeActorLoss):
 * each loss_mode x loss_agg_mode x KL loss on/off x entropy bonus on/off, on ragged masks with
 * all-padding rows and poisoned padding; gspo's backward also against finite differences of its
 * stop-gradient surrogate; and the rule that a loss without a GPU form is an error.
 */
import assert from "node:assert/strict";
import { computeActorLoss } from "../actor_loss.ts";
import { LOSS_AGG_MODES } from "../agg.ts";
import { POLICY_LOSSES } from "../policy_loss.ts";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward, Tensor } from "../../tensor/mod.ts";
import {
  GPU_POLICY_LOSSES,
  gpuPolicyLoss,
  POLICY_LOSS_STATS,
  ppoPolicyLoss,
  type PpoPolicyLossOptions,
} from "./ppo_loss.ts";
import { count, poison, raggedMask } from "./test_inputs.ts";

interface Inputs {
  B: number;
  R: number;
  mask: Int32Array; // [B, R]
  lp: Float32Array; // [B, R]
  old: Float32Array;
  adv: Float32Array;
  ent: Float32Array;
  ref: Float32Array;
}

/**
 * Random inputs whose log-ratios cover every branch: inside and outside the clip range, past
 * dual-clip's c = 3 (vanilla), and for gspo rows whose mean log-ratio is small, large, or past the
 * clamp at 10 (row 3).
 */
function inputs(B: number, R: number, seed: number): Inputs {
  const n = B * R, mask = raggedMask(B, R, seed);
  const old = randomArray(n, seed + 1, -3, -0.1);
  const noise = randomArray(n, seed + 2, -1, 1);
  const rowShift = randomArray(B, seed + 3, -0.4, 0.4);
  const lp = old.map((v, i) => {
    const b = Math.floor(i / R);
    return v + (b === 3 ? 12 : rowShift[b]) + (b % 2 ? 2.5 : 0.1) * noise[i];
  });
  return {
    B,
    R,
    mask,
    lp,
    old,
    adv: randomArray(n, seed + 4, -2, 2),
    ent: randomArray(n, seed + 5, 0, 3),
    ref: old.map((v, i) => v + noise[(i * 7) % n]),
  };
}

/** GPU loss, stats and gradients (the loss seeded with `seed`) for `x` under `o`. */
async function gpuRun(x: Inputs, o: PpoPolicyLossOptions, withEntropy: boolean, seed: number) {
  const t = (a: Float32Array) => Tensor.from(poison(a, x.mask), [x.B, x.R]);
  const logProb = t(x.lp), entropy = withEntropy ? t(x.ent) : undefined;
  logProb.requiresGrad = true;
  if (entropy) entropy.requiresGrad = true;
  const out = ppoPolicyLoss(logProb, t(x.old), t(x.adv), Tensor.from(x.mask, [x.B, x.R], "i32"), {
    ...o,
    entropy,
    refLogProb: o.useKlLoss ? t(x.ref) : undefined,
  });
  const stats = await out.stats.toArray(), loss = (await out.loss.toArray())[0];
  backward(out.loss, Tensor.from([seed], [1]));
  const dlogp = await logProb.grad!.toArray();
  const dent = entropy?.grad ? await entropy.grad.toArray() : null;
  return { stats, loss, dlogp, dent };
}

gpuTest("every loss_mode x loss_agg_mode x KL x entropy matches computeActorLoss", async () => {
  let k = 0, dualClipped = 0, gspoClipped = 0, gspoUnclipped = 0;
  for (const lossMode of POLICY_LOSSES.names()) {
    for (const lossAggMode of LOSS_AGG_MODES) {
      for (const useKlLoss of [false, true]) {
        for (const withEntropy of [false, true]) {
          k++;
          const x = inputs(6, 11, 100 + 10 * k);
          // mini-batch-wide denominators on every other case, as micro-batches use them
          const global = k % 2
            ? { batchNumTokens: count(x.mask) + 5, globalBatchSize: x.B + 3 }
            : {};
          const o: PpoPolicyLossOptions = {
            lossMode,
            lossAggMode,
            clipRatioLow: 0.2,
            clipRatioHigh: 0.28,
            clipRatioC: 3,
            entropyCoeff: withEntropy ? 0.03 : 0,
            useKlLoss,
            klLossCoef: 0.1,
            klLossType: ["low_var_kl", "kl", "mse", "abs+"][k % 4],
            ...global,
          };
          const cpu = computeActorLoss({
            R: x.R,
            logProb: x.lp,
            oldLogProb: x.old,
            advantages: x.adv,
            responseMask: x.mask,
            entropy: withEntropy ? x.ent : undefined,
            refLogProb: useKlLoss ? x.ref : undefined,
          }, { ...o, policyLoss: lossMode });
          const gpu = await gpuRun(x, o, withEntropy, 1.5);
          const label = `${lossMode} ${lossAggMode} kl=${useKlLoss} entropy=${withEntropy}`;
          const expected = POLICY_LOSS_STATS.map((name) => cpu.metrics[name] ?? 0);
          assertClose(gpu.stats, expected, { atol: 1e-5, rtol: 1e-4, label: `stats ${label}` });
          assertClose([gpu.loss], [cpu.loss], { atol: 1e-5, rtol: 1e-4, label: `loss ${label}` });
          const dlp = cpu.gradLogProb.map((g) => 1.5 * g);
          assertClose(gpu.dlogp, dlp, { atol: 1e-6, rtol: 1e-4, label: `dlogp ${label}` });
          if (withEntropy) {
            const de = cpu.gradEntropy!.map((g) => 1.5 * g);
            assertClose(gpu.dent!, de, { atol: 1e-7, rtol: 1e-4, label: `dent ${label}` });
          }
          if (lossMode === "vanilla") {
            if (cpu.metrics["actor/pg_clipfrac_lower"] > 0) dualClipped++;
          } else {
            const f = cpu.metrics["actor/pg_clipfrac"];
            if (f > 0) gspoClipped++;
            if (f < 1) gspoUnclipped++;
          }
        }
      }
    }
  }
  // every case exercises every branch: dual clip (vanilla), clipped and unclipped tokens (gspo)
  assert.deepEqual([dualClipped, gspoClipped, gspoUnclipped], [16, 16, 16]);
});

gpuTest("gspo backward equals finite differences of the stop-gradient surrogate", async () => {
  const x = inputs(5, 7, 900);
  const o: PpoPolicyLossOptions = {
    lossMode: "gspo",
    lossAggMode: "token-mean",
    clipRatio: 0.2,
    entropyCoeff: 0.02,
    useKlLoss: true,
    klLossType: "mse",
    klLossCoef: 0.2,
  };
  const gpu = await gpuRun(x, o, true, 1);
  // f(logp) with sg(logp) held at the evaluation point: what autograd differentiates.
  const base = Float64Array.from(x.lp);
  const f = (lp: Float64Array) =>
    computeActorLoss({
      R: x.R,
      logProb: lp,
      oldLogProb: Float64Array.from(x.old),
      advantages: Float64Array.from(x.adv),
      responseMask: x.mask,
      entropy: Float64Array.from(x.ent),
      refLogProb: Float64Array.from(x.ref),
    }, { ...o, policyLoss: "gspo", detachedLogProb: base }).loss;
  const fd = finiteDiff(f, base, 1e-5);
  assertClose(gpu.dlogp, fd, { atol: 2e-6, rtol: 1e-3, label: "gspo dlogp vs FD" });
  assert.ok(gpu.dlogp.some((g) => g !== 0), "some gradient flows");
});

gpuTest(
  "every policy loss the config accepts has a GPU form; others are errors naming the key",
  () => {
    for (const name of POLICY_LOSSES.names()) {
      assert.ok(GPU_POLICY_LOSSES.has(name), `policy loss "${name}" has no GPU implementation`);
    }
    assert.throws(
      () => gpuPolicyLoss("sapo"),
      /actor\.policy_loss\.loss_mode "sapo" has no GPU implementation; GPU policy losses: vanilla, gspo/,
    );
    const t = () => Tensor.empty([2, 3]);
    assert.throws(
      () => ppoPolicyLoss(t(), t(), t(), Tensor.empty([2, 3], "i32"), { lossMode: "clip_cov" }),
      /actor\.policy_loss\.loss_mode "clip_cov" has no GPU implementation/,
    );
    // gspo has no dual clip, so clip_ratio_c is not checked for it
    ppoPolicyLoss(t(), t(), t(), Tensor.empty([2, 3], "i32"), { lossMode: "gspo", clipRatioC: 1 });
  },
);
