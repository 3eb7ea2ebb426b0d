import assert from "node:assert/strict";
import { makeModelConfig, type ModelConfig } from "../io/mod.ts";
import { assertClose } from "../testing/mod.ts";
import { ropeFrequencies } from "./rope_scaling.ts";

/** A one-layer Llama config with head_dim D, base theta and the given rope_scaling. */
function config(
  D: number,
  theta: number,
  scaling: Record<string, unknown> | null,
  maxPos = 131072,
) {
  return makeModelConfig({
    modelType: "llama",
    hiddenSize: 2 * D,
    intermediateSize: 8,
    numHiddenLayers: 1,
    numAttentionHeads: 2,
    vocabSize: 8,
    eosTokenId: 1,
    ropeTheta: theta,
    ropeScaling: scaling,
    maxPositionEmbeddings: maxPos,
  });
}

/** The formulas of transformers' modeling_rope_utils, written out in f64 loops. */
function plain(theta: number, D: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < D / 2; i++) out.push(1 / Math.pow(theta, (2 * i) / D));
  return out;
}

function check(c: ModelConfig, expected: number[], label: string, seqLen?: number) {
  const got = ropeFrequencies(c, { seqLen }).invFreq;
  assertClose(got, expected, { atol: 0, rtol: 1e-6, label });
}

Deno.test("rope frequencies: default and linear against the formula", () => {
  check(config(128, 1e6, null), plain(1e6, 128), "default theta 1e6");
  check(config(64, 1e4, { type: "linear", factor: 4 }), plain(1e4, 64).map((v) => v / 4), "linear");
});

Deno.test("rope frequencies: llama3 (Llama 3.1 numbers) against the formula", () => {
  const theta = 5e5, D = 128, factor = 8, low = 1, high = 4, old = 8192;
  const expected: number[] = [];
  for (const inv of plain(theta, D)) {
    const wavelen = 2 * Math.PI / inv;
    if (wavelen < old / high) expected.push(inv);
    else if (wavelen > old / low) expected.push(inv / factor);
    else {
      const smooth = (old / wavelen - low) / (high - low);
      expected.push((1 - smooth) * inv / factor + smooth * inv);
    }
  }
  const scaling = {
    rope_type: "llama3",
    factor,
    low_freq_factor: low,
    high_freq_factor: high,
    original_max_position_embeddings: old,
  };
  const c = config(D, theta, scaling);
  check(c, expected, "llama3");
  // All three bands occur at these numbers: kept, blended and divided.
  const p = plain(theta, D), got = ropeFrequencies(c).invFreq;
  const near = (a: number, b: number) => Math.abs(a - b) <= 1e-6 * b;
  assert.ok(got.some((v, i) => near(v, p[i])));
  assert.ok(got.some((v, i) => near(v, p[i] / factor)));
  assert.ok(got.some((v, i) => v < p[i] * 0.99 && v > (p[i] / factor) * 1.01));
  assert.equal(ropeFrequencies(c).attentionScaling, 1);
});

Deno.test("rope frequencies: yarn (explicit and implicit factor, mscale) against the formula", () => {
  const theta = 1e6, D = 128, factor = 4, orig = 32768, betaFast = 32, betaSlow = 1;
  const dim = (rot: number) => (D * Math.log(orig / (rot * 2 * Math.PI))) / (2 * Math.log(theta));
  const low = Math.max(Math.floor(dim(betaFast)), 0),
    high = Math.min(Math.ceil(dim(betaSlow)), D - 1);
  const expected: number[] = [];
  for (let i = 0; i < D / 2; i++) {
    const pos = Math.pow(theta, (2 * i) / D);
    const ramp = Math.min(1, Math.max(0, (i - low) / (high - low)));
    const keep = 1 - ramp; // the extrapolated share
    expected.push((1 / (factor * pos)) * (1 - keep) + (1 / pos) * keep);
  }
  const c = config(D, theta, { rope_type: "yarn", factor, original_max_position_embeddings: orig });
  check(c, expected, "yarn");
  assertClose([ropeFrequencies(c).attentionScaling], [0.1 * Math.log(factor) + 1], { atol: 1e-15 });
  // transformers 5: no factor means max_position_embeddings / original.
  const implicit = config(
    D,
    theta,
    { rope_type: "yarn", original_max_position_embeddings: orig },
    4 * orig,
  );
  check(implicit, expected, "yarn, implicit factor");
  const mscale = config(D, theta, {
    rope_type: "yarn",
    factor: 40,
    mscale: 0.707,
    mscale_all_dim: 0.707,
    original_max_position_embeddings: 4096,
  });
  // Equal mscales cancel: DeepSeek-V3's numbers give an attention factor of exactly 1.
  assert.equal(ropeFrequencies(mscale).attentionScaling, 1);
  const given = config(D, theta, { rope_type: "yarn", factor, attention_factor: 0.8 });
  assert.equal(ropeFrequencies(given).attentionScaling, 0.8);
});

Deno.test("rope frequencies: dynamic NTK grows the base past max_position_embeddings only", () => {
  const theta = 1e4, D = 64, factor = 2, M = 2048;
  const c = config(D, theta, { rope_type: "dynamic", factor }, M);
  check(c, plain(theta, D), "dynamic within the context", M);
  check(c, plain(theta, D), "dynamic, no length given");
  const L = 5000, base = theta * Math.pow((factor * L) / M - (factor - 1), D / (D - 2));
  check(c, plain(base, D), "dynamic at 5000 tokens", L);
});
