/**
 * The GPU token choice of clip_cov and kl_cov against cov_select.ts: odd shapes over several
 * workgroup chunks, ties at the quota, all-padding calls, the trainer's [n, P + R] layout.
 */
import assert from "node:assert/strict";
import { clipCovSelection, klCovSelection } from "../policy_losses/cov_select.ts";
import { gpuTest, randomArray } from "../../testing/mod.ts";
import { Tensor } from "../../tensor/mod.ts";
import { covSelect, type CovSelectOptions } from "./ppo_loss_cov.ts";
import { count, poison, raggedMask } from "./test_inputs.ts";

interface Call {
  B: number;
  R: number;
  mask: Int32Array;
  lp: Float32Array;
  old: Float32Array;
  adv: Float32Array;
}

function call(B: number, R: number, seed: number): Call {
  const n = B * R, mask = raggedMask(B, R, seed);
  const old = randomArray(n, seed + 1, -3, -0.1);
  const lp = old.map((v, i) => v + randomArray(n, seed + 2, -0.5, 0.5)[i]);
  return { B, R, mask, lp, old, adv: randomArray(n, seed + 3, -2, 2) };
}

async function gpuChoice(c: Call, o: Omit<CovSelectOptions, "validTokens">): Promise<number[]> {
  const t = (a: Float32Array) => Tensor.from(poison(a, c.mask), [c.B, c.R]);
  const out = covSelect(t(c.lp), t(c.old), t(c.adv), Tensor.from(c.mask, [c.B, c.R], "i32"), {
    ...o,
    validTokens: count(c.mask),
  });
  return Array.from(await out.toArray());
}

function cpuChoice(c: Call, o: Omit<CovSelectOptions, "validTokens">): number[] {
  const inp = { R: c.R, advantages: c.adv, logProb: c.lp, responseMask: c.mask };
  if (o.mode === "kl_cov") return Array.from(klCovSelection(inp, o.ratio));
  const lo = o.clipLow ?? 0.2, hi = o.clipHigh ?? 0.2;
  const clipped = c.mask.map((m, i) => {
    const r = Math.exp(c.lp[i] - c.old[i]), a = c.adv[i];
    return m && -a * Math.min(Math.max(r, 1 - lo), 1 + hi) > -a * r ? 1 : 0;
  });
  const choice = { ratio: o.ratio, lb: o.lb ?? 1, ub: o.ub ?? 5, clipped, seed: o.seed ?? 0 };
  return Array.from(clipCovSelection(inp, choice));
}

const SHAPES: [number, number][] = [[1, 1], [3, 7], [6, 11], [5, 130], [9, 61]];

gpuTest("covSelect matches the reference choice: kl_cov and clip_cov, odd shapes", async () => {
  for (const [k, [B, R]] of SHAPES.entries()) {
    const c = call(B, R, 10 * k + 3);
    for (const ratio of [0.0002, 0.05, 0.3, 1]) {
      const kl = { mode: "kl_cov" as const, ratio };
      assert.deepEqual(await gpuChoice(c, kl), cpuChoice(c, kl), `kl_cov [${B}, ${R}] ${ratio}`);
      const cc = {
        mode: "clip_cov" as const,
        ratio,
        lb: -0.5,
        ub: 0.8,
        clipLow: 0.1,
        clipHigh: 0.15,
        seed: 5 + k,
      };
      const got = await gpuChoice(c, cc);
      assert.deepEqual(got, cpuChoice(c, cc), `clip_cov [${B}, ${R}] ${ratio}`);
      if (count(c.mask) > 20) assert.ok(got.some((v) => v), "some token is chosen");
    }
  }
});

gpuTest(
  "covSelect: ties at the quota go to the lower index; nothing valid chooses nothing",
  async () => {
    // four identical tokens (equal covariance) around a unique top one; quota 3 of 8 valid
    const B = 2, R = 4;
    const c: Call = {
      B,
      R,
      mask: Int32Array.from([1, 1, 1, 1, 1, 1, 1, 1]),
      lp: Float32Array.from([-1, -2, -2, -0.5, -2, -2, -3, -1]),
      old: new Float32Array(8).fill(-1),
      adv: Float32Array.from([0, 1, 1, -1, 1, 1, 0.5, -2]),
    };
    const o = { mode: "kl_cov" as const, ratio: 3 / 8 };
    const want = cpuChoice(c, o);
    assert.equal(want.reduce((a, b) => a + b), 3);
    assert.deepEqual(await gpuChoice(c, o), want);
    const none = { ...c, mask: new Int32Array(8) };
    assert.deepEqual(await gpuChoice(none, o), new Array(8).fill(0));
    assert.deepEqual(
      await gpuChoice(none, { mode: "clip_cov", ratio: 0.5, lb: -9, ub: 9 }),
      new Array(8).fill(0),
    );
  },
);
