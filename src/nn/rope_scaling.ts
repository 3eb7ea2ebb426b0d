/**
 * RoPE inverse frequencies [D/2] and the cos/sin factor of each rope type, as transformers'
 * modeling_rope_utils computes them: default, linear, dynamic (NTK, from the forward's longest
 * sequence), llama3 and yarn. Each step is rounded to f32 where torch computes in f32, so the
 * tables equal transformers' to the last bit or within an ulp. The GPU decoder uploads these
 * tables (dynamic ones it builds on the GPU with the same formula); the CPU reference uses them.
 */
import { type ModelConfig, type RopeScaling, ropeScalingOf } from "../io/mod.ts";
import { ropeDynamicInvFreqRef, ropeInvFreq } from "../tensor/mod.ts";

const f = Math.fround;

export interface RopeFrequencies {
  invFreq: Float32Array; // [D/2]
  /** Factor on cos and sin (YaRN's attention factor; 1 for the others). */
  attentionScaling: number;
}

/** linear: every frequency divided by the factor (positions stretched by it). */
function linear(inv: Float32Array, s: RopeScaling): Float32Array {
  return inv.map((v) => f(v / f(s.factor)));
}

/**
 * llama3: wavelengths above original / low_freq_factor are divided by the factor, those below
 * original / high_freq_factor kept, and the band between blended by a linear smooth factor.
 */
function llama3(inv: Float32Array, s: RopeScaling): Float32Array {
  const old = s.originalMaxPositionEmbeddings;
  const lowWavelen = f(old / s.lowFreqFactor), highWavelen = f(old / s.highFreqFactor);
  return inv.map((v) => {
    const wavelen = f(f(2 * Math.PI) / v);
    const scaled = wavelen > lowWavelen ? f(v / f(s.factor)) : v;
    if (wavelen < highWavelen || wavelen > lowWavelen) return scaled;
    const smooth = f(f(f(old / wavelen) - s.lowFreqFactor) / f(s.highFreqFactor - s.lowFreqFactor));
    return f(f(f(f(1 - smooth) * scaled) / f(s.factor)) + f(smooth * scaled));
  });
}

/** yarn's dimension at which a wavelength fits `rotations` times into the original context. */
function correctionDim(rotations: number, D: number, theta: number, original: number): number {
  return (D * Math.log(original / (rotations * 2 * Math.PI))) / (2 * Math.log(theta));
}

/**
 * yarn: dimensions below the beta_fast correction keep their frequency (extrapolation), those
 * above beta_slow's are divided by the factor (interpolation), with a linear ramp between.
 */
function yarn(theta: number, D: number, s: RopeScaling): Float32Array {
  const orig = s.originalMaxPositionEmbeddings;
  let low = correctionDim(s.betaFast, D, theta, orig);
  let high = correctionDim(s.betaSlow, D, theta, orig);
  if (s.truncate) [low, high] = [Math.floor(low), Math.ceil(high)];
  [low, high] = [Math.max(low, 0), Math.min(high, D - 1)];
  if (low === high) high += 0.001; // as transformers: avoids dividing by zero
  return Float32Array.from({ length: D / 2 }, (_, i) => {
    const pos = f(Math.pow(f(theta), f((2 * i) / D)));
    const extrapolation = f(1 / pos), interpolation = f(1 / f(f(s.factor) * pos));
    const ramp = Math.min(1, Math.max(0, f(f(i - low) / f(high - low))));
    const keep = f(1 - ramp); // share of the extrapolated (unscaled) frequency
    return f(f(interpolation * f(1 - keep)) + f(extrapolation * keep));
  });
}

/**
 * The frequencies and cos/sin factor of `config`'s RoPE. `seqLen` (the longest sequence of the
 * forward, i.e. max position + 1) matters only for dynamic scaling; without it, or up to
 * max_position_embeddings, dynamic gives the plain table, as transformers does.
 */
export function ropeFrequencies(
  config: ModelConfig,
  options: { seqLen?: number } = {},
): RopeFrequencies {
  const s = ropeScalingOf(config);
  const D = config.headDim, theta = config.ropeTheta;
  const plain = ropeInvFreq(theta, D);
  switch (s.type) {
    case "default":
      return { invFreq: plain, attentionScaling: 1 };
    case "linear":
      return { invFreq: linear(plain, s), attentionScaling: 1 };
    case "llama3":
      return { invFreq: llama3(plain, s), attentionScaling: 1 };
    case "yarn":
      return { invFreq: yarn(theta, D, s), attentionScaling: s.attentionScaling };
    case "dynamic": {
      const seqLen = options.seqLen ?? 0;
      const invFreq = seqLen <= config.maxPositionEmbeddings ? plain : ropeDynamicInvFreqRef(
        [seqLen - 1],
        {
          theta,
          headDim: D,
          factor: s.factor,
          maxPositionEmbeddings: config.maxPositionEmbeddings,
        },
      );
      return { invFreq, attentionScaling: 1 };
    }
  }
}
