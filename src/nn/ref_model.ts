/**
 * Plain-TS reference forward of the Qwen2 / Qwen3 / Llama / Mistral decoder with Hugging Face
 * semantics: RMSNorm computed in float and scaled by its weight, Qwen3's RMSNorm over each head
 * of q and k, RoPE with the rotate_half convention and the config's rope scaling (its frequency
 * table and cos/sin factor; dynamic NTK from the batch's largest position), grouped-query
 * attention masked causally and by the attention mask (left padding), SwiGLU MLP, optional
 * attention and MLP biases, tied or untied lm_head. Activations are f64 so that finite
 * differences of this forward are accurate enough to check GPU gradients. Slow on purpose:
 * readable loops only.
 */
import { architecture, type ModelConfig } from "../io/mod.ts";
import { ropeFrequencies } from "./rope_scaling.ts";
import { hasOutputBias, VALUE_HEAD_BIAS, VALUE_HEAD_WEIGHT } from "./weights.ts";

export type RefWeights = ReadonlyMap<string, ArrayLike<number>>;

export interface RefInputs {
  inputIds: Int32Array; // [B, T]
  batch: number;
  seqLen: number;
  /** 1 = real token, 0 = padding; all ones when absent. [B, T] */
  attentionMask?: Int32Array;
  /** Rotary positions; derived from the mask (verl's cumsum - 1, clipped at 0) when absent. */
  positionIds?: Int32Array;
}

/** verl / HF position ids for left padding: cumsum(mask) - 1, clipped at 0. [B, T] */
export function positionIdsFromMask(mask: Int32Array, batch: number, seqLen: number): Int32Array {
  const out = new Int32Array(batch * seqLen);
  for (let b = 0; b < batch; b++) {
    let c = 0;
    for (let t = 0; t < seqLen; t++) {
      c += mask[b * seqLen + t];
      out[b * seqLen + t] = Math.max(0, c - 1);
    }
  }
  return out;
}

function get(w: RefWeights, name: string): ArrayLike<number> {
  const v = w.get(name);
  if (!v) throw new Error(`ref_model: missing weight ${name}`);
  return v;
}

/** out[n, o] = sum_i x[n, i] * w[o, i] + bias[o]. x [N, In], w [Out, In] -> [N, Out] */
function linear(
  x: Float64Array,
  w: ArrayLike<number>,
  bias: ArrayLike<number> | undefined,
  n: number,
  inDim: number,
  outDim: number,
): Float64Array {
  const out = new Float64Array(n * outDim);
  for (let r = 0; r < n; r++) {
    for (let o = 0; o < outDim; o++) {
      let acc = bias ? bias[o] : 0;
      for (let i = 0; i < inDim; i++) acc += x[r * inDim + i] * w[o * inDim + i];
      out[r * outDim + o] = acc;
    }
  }
  return out;
}

/** HF RMSNorm: x / sqrt(mean(x^2) + eps) * weight, per row. [N, C] */
function rmsNorm(x: Float64Array, w: ArrayLike<number>, n: number, c: number, eps: number) {
  const out = new Float64Array(n * c);
  for (let r = 0; r < n; r++) {
    let ss = 0;
    for (let i = 0; i < c; i++) ss += x[r * c + i] ** 2;
    const inv = 1 / Math.sqrt(ss / c + eps);
    for (let i = 0; i < c; i++) out[r * c + i] = x[r * c + i] * inv * w[i];
  }
  return out;
}

/**
 * In-place rotary embedding, rotate_half convention: pairs (i, i + D/2), angle p * invFreq[i],
 * cos and sin times `scale`. x [B, T, H, D]
 */
function rope(
  x: Float64Array,
  pos: Int32Array,
  shape: [number, number, number, number],
  table: { invFreq: Float32Array; attentionScaling: number },
): void {
  const [B, T, H, D] = shape;
  const half = D / 2;
  const scale = table.attentionScaling;
  for (let bt = 0; bt < B * T; bt++) {
    const p = pos[bt];
    for (let h = 0; h < H; h++) {
      const base = (bt * H + h) * D;
      for (let i = 0; i < half; i++) {
        const ang = p * table.invFreq[i];
        const cos = Math.cos(ang) * scale, sin = Math.sin(ang) * scale;
        const x1 = x[base + i], x2 = x[base + i + half];
        x[base + i] = x1 * cos - x2 * sin;
        x[base + i + half] = x2 * cos + x1 * sin;
      }
    }
  }
}

/**
 * Causal, padding-masked grouped-query attention. q [B, T, Hq, D], k/v [B, T, Hkv, D] -> [B, T, Hq, D].
 * Rows with no visible key (a pad query at the far left) give zeros; their outputs are never used.
 */
function attention(
  q: Float64Array,
  k: Float64Array,
  v: Float64Array,
  mask: Int32Array,
  B: number,
  T: number,
  Hq: number,
  Hkv: number,
  D: number,
): Float64Array {
  const out = new Float64Array(B * T * Hq * D);
  const group = Hq / Hkv;
  const scale = 1 / Math.sqrt(D);
  const scores = new Float64Array(T);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < Hq; h++) {
      const kh = Math.floor(h / group);
      for (let t = 0; t < T; t++) {
        const qo = ((b * T + t) * Hq + h) * D;
        let max = -Infinity;
        for (let s = 0; s <= t; s++) {
          if (!mask[b * T + s]) {
            scores[s] = -Infinity;
            continue;
          }
          const ko = ((b * T + s) * Hkv + kh) * D;
          let dot = 0;
          for (let d = 0; d < D; d++) dot += q[qo + d] * k[ko + d];
          scores[s] = dot * scale;
          max = Math.max(max, scores[s]);
        }
        if (max === -Infinity) continue;
        let sum = 0;
        for (let s = 0; s <= t; s++) {
          scores[s] = Math.exp(scores[s] - max);
          sum += scores[s];
        }
        for (let s = 0; s <= t; s++) {
          const p = scores[s] / sum;
          if (p === 0) continue;
          const vo = ((b * T + s) * Hkv + kh) * D;
          for (let d = 0; d < D; d++) out[qo + d] += p * v[vo + d];
        }
      }
    }
  }
  return out;
}

/** Final-norm hidden states of the trunk. -> [B, T, C] */
export function refHidden(config: ModelConfig, w: RefWeights, inputs: RefInputs): Float64Array {
  const c = config;
  const { batch: B, seqLen: T, inputIds } = inputs;
  const C = c.hiddenSize, D = c.headDim, Hq = c.numAttentionHeads, Hkv = c.numKeyValueHeads;
  const I = c.intermediateSize, N = B * T;
  const mask = inputs.attentionMask ?? new Int32Array(N).fill(1);
  const pos = inputs.positionIds ?? positionIdsFromMask(mask, B, T);
  // transformers sizes dynamic NTK by the forward's largest position.
  const table = ropeFrequencies(c, { seqLen: pos.reduce((a, b) => Math.max(a, b), 0) + 1 });
  const qkNorm = architecture(c.modelType).qkNorm;
  const emb = get(w, "model.embed_tokens.weight");
  const h = new Float64Array(N * C); // residual stream [B, T, C]
  for (let n = 0; n < N; n++) {
    const id = inputIds[n];
    if (id < 0 || id >= c.vocabSize) throw new Error(`ref_model: token id ${id} out of range`);
    for (let i = 0; i < C; i++) h[n * C + i] = emb[id * C + i];
  }
  for (let l = 0; l < c.numHiddenLayers; l++) {
    const p = `model.layers.${l}`;
    const bias = (name: string) => (c.attentionBias ? get(w, `${p}.self_attn.${name}`) : undefined);
    const x = rmsNorm(h, get(w, `${p}.input_layernorm.weight`), N, C, c.rmsNormEps);
    const q = linear(x, get(w, `${p}.self_attn.q_proj.weight`), bias("q_proj.bias"), N, C, Hq * D);
    const k = linear(x, get(w, `${p}.self_attn.k_proj.weight`), bias("k_proj.bias"), N, C, Hkv * D);
    const v = linear(x, get(w, `${p}.self_attn.v_proj.weight`), bias("v_proj.bias"), N, C, Hkv * D);
    if (qkNorm) {
      // One weight [D] over every head: rows of the [N * H, D] views.
      q.set(rmsNorm(q, get(w, `${p}.self_attn.q_norm.weight`), N * Hq, D, c.rmsNormEps));
      k.set(rmsNorm(k, get(w, `${p}.self_attn.k_norm.weight`), N * Hkv, D, c.rmsNormEps));
    }
    rope(q, pos, [B, T, Hq, D], table);
    rope(k, pos, [B, T, Hkv, D], table);
    const att = attention(q, k, v, mask, B, T, Hq, Hkv, D); // [B, T, Hq, D]
    const oBias = hasOutputBias(c) ? get(w, `${p}.self_attn.o_proj.bias`) : undefined;
    const o = linear(att, get(w, `${p}.self_attn.o_proj.weight`), oBias, N, Hq * D, C);
    for (let i = 0; i < N * C; i++) h[i] += o[i];
    const x2 = rmsNorm(h, get(w, `${p}.post_attention_layernorm.weight`), N, C, c.rmsNormEps);
    const mlp = (name: string) => get(w, `${p}.mlp.${name}.weight`);
    const mlpBias = (name: string) => (c.mlpBias ? get(w, `${p}.mlp.${name}.bias`) : undefined);
    const gate = linear(x2, mlp("gate_proj"), mlpBias("gate_proj"), N, C, I);
    const up = linear(x2, mlp("up_proj"), mlpBias("up_proj"), N, C, I);
    for (let i = 0; i < N * I; i++) gate[i] = (gate[i] / (1 + Math.exp(-gate[i]))) * up[i];
    const down = linear(gate, mlp("down_proj"), mlpBias("down_proj"), N, I, C);
    for (let i = 0; i < N * C; i++) h[i] += down[i];
  }
  return rmsNorm(h, get(w, "model.norm.weight"), N, C, c.rmsNormEps);
}

/** Logits of the causal LM. -> [B, T, V] */
export function refLogits(config: ModelConfig, w: RefWeights, inputs: RefInputs): Float64Array {
  const hidden = refHidden(config, w, inputs);
  const head = config.tieWordEmbeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  const N = inputs.batch * inputs.seqLen;
  return linear(hidden, get(w, head), undefined, N, config.hiddenSize, config.vocabSize);
}

/** Critic values: the trunk's hidden states through the scalar `score` head. -> [B, T] */
export function refValues(config: ModelConfig, w: RefWeights, inputs: RefInputs): Float64Array {
  const hidden = refHidden(config, w, inputs);
  const N = inputs.batch * inputs.seqLen;
  return linear(hidden, get(w, VALUE_HEAD_WEIGHT), w.get(VALUE_HEAD_BIAS), N, config.hiddenSize, 1);
}
