/**
 * Every policy loss the config accepts, on the GPU, against the CPU reference (computeActorLoss):
 * each loss_mode x loss_agg_mode x KL loss on/off x entropy bonus on/off, on ragged masks with
 * all-padding rows and poisoned padding; the backward of every loss also against finite
 * differences of its stop-gradient surrogate; and the rule that a loss without a GPU form is an
 * error.
 */
import assert from "node:assert/strict";
import { computeActorLoss } from "../actor_loss.ts";
import { LOSS_AGG_MODES } from "../agg.ts";
import { POLICY_LOSSES } from "../policy_loss.ts";
import { assertClose, finiteDiff, gpuTest, randomArray } from "../../testing/mod.ts";
import { backward, Tensor } from "../../tensor/mod.ts";
import { POLICY_LOSS_STATS, ppoPolicyLoss, type PpoPolicyLossOptions } from "./ppo_loss.ts";
import { GPU_POLICY_LOSSES, gpuPolicyLoss } from "./ppo_loss_modes.ts";
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
 * clamp at 10 (row 3 shifted by `far`). The losses with an unclamped exp(logp - old) get a nearer
 * row 3: ratios of e^12 summed with both signs would cancel below f32 resolution.
 */
function inputs(B: number, R: number, seed: number, far = 12): Inputs {
  const n = B * R, mask = raggedMask(B, R, seed);
  const old = randomArray(n, seed + 1, -3, -0.1);
  const noise = randomArray(n, seed + 2, -1, 1);
  const rowShift = randomArray(B, seed + 3, -0.4, 0.4);
  const lp = old.map((v, i) => {
    const b = Math.floor(i / R);
    return v + (b === 3 ? far : rowShift[b]) + (b % 2 ? 2.5 : 0.1) * noise[i];
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

/** Settings of the losses that read more than the clip range; wide enough that clip_cov and
 * kl_cov choose several tokens of ~40. */
const LOSS_KEYS = {
  clipCovRatio: 0.2,
  clipCovLb: -1,
  clipCovUb: 1.5,
  klCovRatio: 0.2,
  ppoKlCoef: 0.3,
  tauPos: 1.2,
  tauNeg: 0.9,
};

/** GPU loss, stats and gradients (the loss seeded with `seed`) for `x` under `o`. */
async function gpuRun(x: Inputs, o: PpoPolicyLossOptions, withEntropy: boolean, seed: number) {
  const t = (a: Float32Array) => Tensor.from(poison(a, x.mask), [x.B, x.R]);
  const logProb = t(x.lp), entropy = withEntropy ? t(x.ent) : undefined;
  logProb.requiresGrad = true;
  if (entropy) entropy.requiresGrad = true;
  const out = ppoPolicyLoss(logProb, t(x.old), t(x.adv), Tensor.from(x.mask, [x.B, x.R], "i32"), {
    ...o,
    validTokens: count(x.mask),
    entropy,
    refLogProb: o.useKlLoss ? t(x.ref) : undefined,
  });
  const stats = await out.stats.toArray(), loss = (await out.loss.toArray())[0];
  backward(out.loss, Tensor.from([seed], [1]));
  const dlogp = await logProb.grad!.toArray();
  const dent = entropy?.grad ? await entropy.grad.toArray() : null;
  return { stats, loss, dlogp, dent };
}

/** Max abs error GPU vs CPU per loss over every case (printed: the numbers the docs quote). */
const worst = new Map<string, { value: number; grad: number; scale: number }>();
const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) =>
  Array.from(a).reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

gpuTest("every loss_mode x loss_agg_mode x KL x entropy matches computeActorLoss", async () => {
  let k = 0, dualClipped = 0, gspoClipped = 0, gspoUnclipped = 0, cut = 0, geoBoth = 0;
  for (const lossMode of POLICY_LOSSES.names()) {
    for (const lossAggMode of LOSS_AGG_MODES) {
      for (const useKlLoss of [false, true]) {
        for (const withEntropy of [false, true]) {
          k++;
          const x = inputs(6, 11, 100 + 10 * k, lossMode === "gspo" ? 12 : 3);
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
            ...LOSS_KEYS,
            seed: 1000 + k,
            // reinforce's importance weights (the other losses ignore them)
            rolloutIs: (["token", "sequence", null] as const)[k % 3],
            rolloutIsThreshold: 1.5,
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
          const w = worst.get(lossMode) ?? { value: 0, grad: 0, scale: 0 };
          const value = Math.max(maxAbs(gpu.stats, expected), Math.abs(gpu.loss - cpu.loss));
          worst.set(lossMode, {
            value: Math.max(w.value, value),
            grad: Math.max(w.grad, maxAbs(gpu.dlogp, dlp)),
            scale: Math.max(w.scale, ...expected.map(Math.abs), Math.abs(cpu.loss)),
          });
          const f = cpu.metrics["actor/pg_clipfrac"] ?? 0;
          if (lossMode === "vanilla" && cpu.metrics["actor/pg_clipfrac_lower"] > 0) dualClipped++;
          if (lossMode === "gspo" && f > 0) gspoClipped++;
          if (lossMode === "gspo" && f < 1) gspoUnclipped++;
          if (lossMode === "clip_cov" && f > 0) cut++;
          const lower = cpu.metrics["actor/pg_clipfrac_lower"] ?? 0;
          if (lossMode === "geo_mean" && f > 0 && lower > 0) geoBoth++;
        }
      }
    }
  }
  // every case exercises every branch: dual clip (vanilla), clipped and unclipped tokens (gspo),
  // tokens cut (clip_cov), clipping on both sides (geo_mean)
  assert.deepEqual([dualClipped, gspoClipped, gspoUnclipped, cut, geoBoth], [16, 16, 16, 16, 16]);
  console.log("max abs error GPU vs CPU: loss and stats (largest |value|), d loss / d logp:");
  for (const [name, w] of worst) {
    const e = (v: number) => v.toExponential(2);
    console.log(`  ${name.padEnd(9)} ${e(w.value)} (${e(w.scale)})  ${e(w.grad)}`);
  }
});

gpuTest(
  "every loss's GPU backward equals finite differences of its stop-gradient surrogate",
  async () => {
    console.log(
      "max abs error GPU d loss / d logp vs central differences (f64 reference), per loss:",
    );
    for (const [k, lossMode] of POLICY_LOSSES.names().entries()) {
      const x = inputs(5, 7, 900 + k, lossMode === "gspo" ? 12 : 3);
      const o: PpoPolicyLossOptions = {
        lossMode,
        lossAggMode: (["token-mean", "seq-mean-token-mean"] as const)[k % 2],
        clipRatioLow: 0.2,
        clipRatioHigh: 0.28,
        entropyCoeff: 0.02,
        useKlLoss: true,
        klLossType: "mse",
        klLossCoef: 0.2,
        ...LOSS_KEYS,
        seed: 4 + k,
        rolloutIs: "sequence",
        rolloutIsThreshold: 4,
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
        }, { ...o, policyLoss: lossMode, detachedLogProb: base }).loss;
      const fd = finiteDiff(f, base, 1e-5);
      assertClose(gpu.dlogp, fd, { atol: 2e-6, rtol: 1e-3, label: `${lossMode} dlogp vs FD` });
      assert.ok(gpu.dlogp.some((g) => g !== 0), "some gradient flows");
      console.log(`  ${lossMode.padEnd(9)} ${maxAbs(gpu.dlogp, fd).toExponential(2)}`);
    }
  },
);

gpuTest(
  "every policy loss the config accepts has a GPU form; others are errors naming the key",
  () => {
    for (const name of POLICY_LOSSES.names()) {
      assert.ok(GPU_POLICY_LOSSES.has(name), `policy loss "${name}" has no GPU implementation`);
    }
    assert.deepEqual(GPU_POLICY_LOSSES.names(), POLICY_LOSSES.names());
    const names = POLICY_LOSSES.names().join(", ");
    assert.throws(
      () => gpuPolicyLoss("bypass_mode"),
      new RegExp(
        `actor\\.policy_loss\\.loss_mode "bypass_mode" has no GPU implementation; ` +
          `GPU policy losses: ${names}`,
      ),
    );
    const t = () => Tensor.empty([2, 3]), m = () => Tensor.empty([2, 3], "i32");
    assert.throws(
      () => ppoPolicyLoss(t(), t(), t(), m(), { lossMode: "reinforce_plus" }),
      /actor\.policy_loss\.loss_mode "reinforce_plus" has no GPU implementation/,
    );
    // gspo has no dual clip, so clip_ratio_c is not checked for it
    ppoPolicyLoss(t(), t(), t(), m(), { lossMode: "gspo", clipRatioC: 1 });
    for (const lossMode of ["clip_cov", "kl_cov"]) {
      assert.throws(() => ppoPolicyLoss(t(), t(), t(), m(), { lossMode }), /needs validTokens/);
      assert.throws(
        () => ppoPolicyLoss(t(), t(), t(), m(), { lossMode, validTokens: 7 }),
        /validTokens must be an integer in \[0, 6\], got 7/,
      );
    }
    assert.throws(
      () =>
        ppoPolicyLoss(t(), t(), t(), m(), { lossMode: "kl_cov", validTokens: 6, klCovRatio: 2 }),
      /kl_cov_ratio must be in \(0, 1\]/,
    );
    assert.throws(
      () => ppoPolicyLoss(t(), t(), t(), m(), { lossMode: "sapo", tauNeg: 0 }),
      /tau_pos and tau_neg must be > 0/,
    );
  },
);
