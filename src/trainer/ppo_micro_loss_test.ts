/**
 * The trainer's GPU losses in their [n, T] layout (outputs at the positions that predict response
 * tokens) against the CPU references over [n, R]: loss, statistics, and the gradient w.r.t. the
 * log-probs, entropies and values, on ragged masks with holes and an all-padding row.
 */
import assert from "node:assert/strict";
import {
  computeActorLoss,
  computeValueLoss,
  LOSS_AGG_MODES,
  POLICY_LOSS_STATS,
  POLICY_LOSSES,
  VALUE_LOSS_STATS,
} from "../algos/mod.ts";
import { assertClose, gpuTest, randomArray } from "../testing/mod.ts";
import { backward, Tensor } from "../tensor/mod.ts";
import { type Batch, gatherRows, responseScatter, responseSlice } from "./batch.ts";
import {
  type ActorLossConfig,
  actorMicroLoss,
  actorStatNames,
  criticMicroLoss,
  type MicroRows,
} from "./ppo_micro_loss.ts";
import { bareSamples } from "./test_batches.ts";

const B = 6, P = 3, R = 5, T = P + R;
/** The keys only some losses read, wide enough that clip_cov and kl_cov choose tokens. */
const LOSS_KEYS = {
  tauPos: 1,
  tauNeg: 1.05,
  clipCovRatio: 0.3,
  clipCovLb: -5,
  clipCovUb: 5,
  klCovRatio: 0.3,
  ppoKlCoef: 0.4,
};
// ragged: a hole mid-response (row 1), an all-padding row (2), lengths 1..R
const MASK = Int32Array.from([
  ...[1, 1, 1, 0, 0],
  ...[1, 0, 1, 1, 0],
  ...[0, 0, 0, 0, 0],
  ...[1, 1, 1, 1, 1],
  ...[1, 0, 0, 0, 0],
  ...[1, 1, 1, 1, 0],
]);

/** Batch arrays the losses read, NaN on padding (which must not leak). */
function batch(seed: number): Batch {
  const f = (k: number, lo: number, hi: number) =>
    randomArray(B * R, seed + k, lo, hi).map((v, i) => MASK[i] ? v : NaN);
  return {
    ...bareSamples(B, P, R),
    prompts: new Int32Array(B * P),
    promptMask: new Int32Array(B * P),
    responses: new Int32Array(B * R),
    responseMask: MASK,
    oldLogProbs: f(1, -3, -0.5),
    advantages: f(2, -2, 2),
    refLogProbs: f(3, -3, -0.5),
    values: f(4, -1, 1),
    returns: f(5, -2, 2),
  };
}

/** A micro-batch of rows [3, 2, 0] (the all-padding row among them) of a 5-row mini-batch. */
function micro(b: Batch): MicroRows {
  const rows = [3, 2, 0];
  const miniRows = 5,
    miniTokens = [3, 2, 0, 1, 4].reduce(
      (a, r) => a + MASK.subarray(r * R, r * R + R).reduce((x, y) => x + y, 0),
      0,
    );
  const responseMask = new Int32Array(rows.length * R);
  rows.forEach((r, i) => responseMask.set(b.responseMask.subarray(r * R, r * R + R), i * R));
  return { rows, miniRows, miniTokens, responseMask };
}

/** [n, T] model outputs: `resp` at the response positions, NaN elsewhere (masked out). */
function positionedOutput(resp: Float32Array, n: number): Tensor {
  const full = responseScatter(resp, n, P, R);
  const onResponse = responseScatter(new Float32Array(n * R).fill(1), n, P, R);
  const t = Tensor.from(full.map((v, i) => onResponse[i] ? v : NaN), [n, T]);
  t.requiresGrad = true;
  return t;
}

gpuTest("actorMicroLoss ([n, T] layout) matches computeActorLoss over [n, R]", async () => {
  let k = 0;
  for (const policyLoss of POLICY_LOSSES.names()) {
    for (const lossAggMode of LOSS_AGG_MODES) {
      k++;
      const b = batch(10 * k), mb = micro(b), n = mb.rows.length;
      const cfg: ActorLossConfig = {
        policyLoss,
        clipRatio: 0.2,
        clipRatioLow: 0.2,
        clipRatioHigh: 0.28,
        clipRatioC: 3,
        lossAggMode,
        entropyCoeff: k % 2 ? 0.02 : 0,
        useKlLoss: k % 4 < 2,
        klLossCoef: 0.05,
        klLossType: "low_var_kl",
        ...LOSS_KEYS,
      };
      const old = gatherRows(b.oldLogProbs!, R, mb.rows);
      const lp = old.map((v, i) => v + 0.5 * Math.sin(3 * i + k)); // ratios on both sides of the clip
      const ent = randomArray(n * R, 7 * k, 0, 2);
      const logProbs = positionedOutput(lp, n);
      const entropy = cfg.entropyCoeff ? positionedOutput(ent, n) : null;
      const gpu = actorMicroLoss({ logProbs, entropy }, b, mb, cfg, 17 + k);
      const cpu = computeActorLoss({
        R,
        logProb: lp,
        oldLogProb: old,
        advantages: gatherRows(b.advantages!, R, mb.rows),
        responseMask: mb.responseMask,
        entropy: entropy ? ent : undefined,
        refLogProb: cfg.useKlLoss ? gatherRows(b.refLogProbs!, R, mb.rows) : undefined,
      }, { ...cfg, batchNumTokens: mb.miniTokens, globalBatchSize: mb.miniRows, seed: 17 + k });
      const label = `${policyLoss} ${lossAggMode}`;
      if (policyLoss === "clip_cov") assert.ok(cpu.metrics["actor/pg_clipfrac"] > 0, "tokens cut");
      const stats = await gpu.stats.toArray();
      const names = actorStatNames(cfg);
      POLICY_LOSS_STATS.forEach((name, j) => {
        // the names the trainer reports are exactly those the CPU reference reports
        assert.equal(names[j] !== null, name in cpu.metrics, `${label}: ${name} reported`);
        if (names[j]) assertClose([stats[j]], [cpu.metrics[name]], { label: `${label} ${name}` });
      });
      assertClose(await gpu.loss.toArray(), [cpu.loss], { label: `loss ${label}` });
      backward(gpu.loss);
      const dlp = await logProbs.grad!.toArray() as Float32Array;
      assertClose(dlp, responseScatter(cpu.gradLogProb as Float32Array, n, P, R), {
        atol: 1e-6,
        label: `dlogp ${label}`,
      });
      if (entropy) {
        const de = responseSlice(await entropy.grad!.toArray() as Float32Array, n, P, R);
        assertClose(de, cpu.gradEntropy!, { atol: 1e-7, label: `dentropy ${label}` });
      }
    }
  }
});

gpuTest("criticMicroLoss ([n, T] layout) matches computeValueLoss over [n, R]", async () => {
  for (const [k, lossAggMode] of LOSS_AGG_MODES.entries()) {
    const b = batch(100 + k), mb = micro(b), n = mb.rows.length;
    const values = gatherRows(b.values!, R, mb.rows);
    const vp = values.map((v, i) => v + 0.4 * Math.cos(5 * i + k)); // some beyond the clip range
    const vpreds = positionedOutput(vp, n);
    const cfg = { cliprangeValue: 0.2, lossAggMode };
    const gpu = criticMicroLoss(vpreds, b, mb, cfg);
    const cpu = computeValueLoss({
      R,
      vpreds: vp,
      values,
      returns: gatherRows(b.returns!, R, mb.rows),
      responseMask: mb.responseMask,
    }, { ...cfg, batchNumTokens: mb.miniTokens, globalBatchSize: mb.miniRows });
    assert.ok(cpu.vfClipfrac > 0 && cpu.vfClipfrac < 1, "both clip branches");
    const expected = VALUE_LOSS_STATS.map((name) => cpu.metrics[name]);
    assertClose(await gpu.stats.toArray(), expected, { label: `stats ${lossAggMode}` });
    assertClose(await gpu.loss.toArray(), [cpu.vfLoss], { label: `loss ${lossAggMode}` });
    backward(gpu.loss);
    const dv = await vpreds.grad!.toArray() as Float32Array;
    assertClose(dv, responseScatter(cpu.gradVpreds as Float32Array, n, P, R), {
      atol: 1e-6,
      label: `dvpreds ${lossAggMode}`,
    });
  }
});

gpuTest("a loss_mode without a GPU form or a missing batch field is an error naming it", () => {
  const b = batch(1), mb = micro(b);
  const lp = positionedOutput(new Float32Array(mb.rows.length * R), mb.rows.length);
  const cfg: ActorLossConfig = {
    policyLoss: "bypass_mode",
    clipRatio: 0.2,
    clipRatioLow: 0.2,
    clipRatioHigh: 0.2,
    clipRatioC: 3,
    lossAggMode: "token-mean",
    entropyCoeff: 0,
    useKlLoss: false,
    klLossCoef: 0,
    klLossType: "kl",
    ...LOSS_KEYS,
  };
  assert.throws(
    () => actorMicroLoss({ logProbs: lp, entropy: null }, b, mb, cfg),
    /actor\.policy_loss\.loss_mode "bypass_mode" has no GPU implementation/,
  );
  assert.throws(
    () =>
      actorMicroLoss({ logProbs: lp, entropy: null }, { ...b, refLogProbs: undefined }, mb, {
        ...cfg,
        policyLoss: "vanilla",
        useKlLoss: true,
      }),
    /use_kl_loss needs the batch's refLogProbs/,
  );
});

gpuTest(
  "calculate_entropy reports the entropy at entropy_coeff 0; loss_scale_factor divides",
  async () => {
    const b = batch(5), mb = micro(b), n = mb.rows.length;
    const cfg: ActorLossConfig = {
      policyLoss: "vanilla",
      clipRatio: 0.2,
      clipRatioLow: 0.2,
      clipRatioHigh: 0.2,
      clipRatioC: 3,
      lossAggMode: "seq-mean-token-sum-norm",
      entropyCoeff: 0,
      calculateEntropy: true,
      useKlLoss: false,
      klLossCoef: 0,
      klLossType: "kl",
      ...LOSS_KEYS,
    };
    const old = gatherRows(b.oldLogProbs!, R, mb.rows);
    const lp = old.map((v, i) => v + 0.3 * Math.cos(2 * i));
    const ent = randomArray(n * R, 3, 0, 2);
    const run = (c: ActorLossConfig) =>
      actorMicroLoss(
        { logProbs: positionedOutput(lp, n), entropy: positionedOutput(ent, n) },
        b,
        mb,
        c,
      );
    const names = actorStatNames(cfg);
    assert.ok(names.includes("actor/entropy"), "calculate_entropy reports actor/entropy");
    assert.ok(!actorStatNames({ ...cfg, calculateEntropy: false }).includes("actor/entropy"));
    const H = 2; // the divisor instead of R = 5
    const scaled = run({ ...cfg, lossScaleFactor: H });
    const cpu = computeActorLoss({
      R,
      logProb: lp,
      oldLogProb: old,
      advantages: gatherRows(b.advantages!, R, mb.rows),
      responseMask: mb.responseMask,
      entropy: ent,
    }, { ...cfg, lossScaleFactor: H, batchNumTokens: mb.miniTokens, globalBatchSize: mb.miniRows });
    const stats = await scaled.stats.toArray();
    const entropyAt = POLICY_LOSS_STATS.indexOf("actor/entropy");
    assertClose([stats[entropyAt]], [cpu.metrics["actor/entropy"]], { label: "entropy" });
    assertClose(await scaled.loss.toArray(), [cpu.loss], { label: "loss with H" });
    // the same loss divided by R instead of H: entropy_coeff 0 adds nothing
    const byR = await run(cfg).loss.toArray();
    assertClose([byR[0] * R], [cpu.loss * H], { label: "H replaces R" });
  },
);
