import assert from "node:assert/strict";
import type { ModelConfig } from "../io/mod.ts";
import { backward } from "../tensor/mod.ts";
import { mul } from "../tensor/mod.ts";
import { sum } from "../tensor/mod.ts";
import { Tensor } from "../tensor/mod.ts";
import { assertClose, gpuTest, leftPadded, randomArray } from "../testing/mod.ts";
import { CausalLM } from "./causal_lm.ts";
import { positionIdsFromMask, refLogits } from "./ref_model.ts";
import { TINY_LLAMA, TINY_QWEN2, tinyModelConfig, tinyWeights } from "./tiny_model.ts";
import { weightShapes } from "./weights.ts";

/** Rows [N, width] of `x` where mask is 1. */
function validRows(x: ArrayLike<number>, mask: Int32Array, width: number): number[] {
  const out: number[] = [];
  mask.forEach((m, n) => {
    if (m) { for (let i = 0; i < width; i++) out.push(x[n * width + i]); }
  });
  return out;
}

function inputs(B: number, T: number, ids: Int32Array, mask: Int32Array) {
  return {
    ids: Tensor.from(ids, [B, T], "i32"),
    positionIds: Tensor.from(positionIdsFromMask(mask, B, T), [B, T], "i32"),
    attentionMask: Tensor.from(mask, [B, T], "i32"),
  };
}

const configs: [string, ModelConfig][] = [
  ["qwen2 GQA, bias, tied", tinyModelConfig(TINY_QWEN2)],
  ["llama untied, o bias", tinyModelConfig(TINY_LLAMA)],
  [
    "qwen2 untied, no bias, one kv head",
    tinyModelConfig({
      ...TINY_QWEN2,
      tieWordEmbeddings: false,
      attentionBias: false,
      numKeyValueHeads: 1,
    }),
  ],
];

for (const [name, config] of configs) {
  gpuTest(`logits equal the reference forward with left padding: ${name}`, async () => {
    const B = 3, T = 7;
    const weights = tinyWeights(config, { seed: 5, init: "varied" });
    const model = CausalLM.fromTensors(config, weights);
    const { ids, mask } = leftPadded(B, T, [0, 3, 6], config.vocabSize, 9);
    const x = inputs(B, T, ids, mask);
    const logits = model.forward(x.ids, {
      positionIds: x.positionIds,
      attentionMask: x.attentionMask,
    });
    assert.deepEqual(logits.shape, [B, T, config.vocabSize]);
    const expected = refLogits(config, weights, {
      inputIds: ids,
      batch: B,
      seqLen: T,
      attentionMask: mask,
    });
    const V = config.vocabSize;
    assertClose(validRows(await logits.toArray(), mask, V), validRows(expected, mask, V), {
      atol: 2e-4,
      rtol: 1e-3,
      label: "logits",
    });
    model.dispose();
  });
}

gpuTest("KV-cache decoding equals recomputing the whole sequence", async () => {
  const config = tinyModelConfig(TINY_QWEN2);
  const B = 2, P = 5, extra = 4, T = P + extra;
  const weights = tinyWeights(config, { seed: 21, init: "varied" });
  const model = CausalLM.fromTensors(config, weights);
  const { ids, mask } = leftPadded(B, T, [2, 0], config.vocabSize, 4);
  const promptIds = new Int32Array(B * P), promptMask = new Int32Array(B * P);
  for (let b = 0; b < B; b++) {
    promptIds.set(ids.subarray(b * T, b * T + P), b * P);
    promptMask.set(mask.subarray(b * T, b * T + P), b * P);
  }
  const pos = positionIdsFromMask(mask, B, T);
  const cache = model.createCache(B, T + 1, promptMask);
  const prompt = inputs(B, P, promptIds, promptMask);
  const steps = [await model.prefill(cache, prompt.ids, prompt).toArray()];
  for (let s = 0; s < extra - 1; s++) {
    const col = (a: Int32Array) => Int32Array.from({ length: B }, (_, b) => a[b * T + P + s]);
    const logits = model.decodeStep(
      cache,
      Tensor.from(col(ids), [B, 1], "i32"),
      Tensor.from(col(pos), [B, 1], "i32"),
    );
    steps.push(await logits.toArray());
  }
  const full = refLogits(config, weights, {
    inputIds: ids,
    batch: B,
    seqLen: T,
    attentionMask: mask,
  });
  const V = config.vocabSize;
  steps.forEach((got, s) => {
    const want = new Float64Array(B * V);
    for (let b = 0; b < B; b++) {
      want.set(full.subarray((b * T + P - 1 + s) * V, (b * T + P + s) * V), b * V);
    }
    assertClose(got, want, { atol: 2e-4, rtol: 1e-3, label: `step ${s}` });
  });
  assert.equal(cache.length, P + extra - 1);
  cache.dispose();
  model.dispose();
});

gpuTest("gradients of a projected loss match finite differences of the reference", async () => {
  const config = tinyModelConfig({ ...TINY_QWEN2, numHiddenLayers: 1 });
  const B = 2, T = 4, V = config.vocabSize;
  const weights = tinyWeights(config, { seed: 8, init: "varied" });
  const model = CausalLM.fromTensors(config, weights);
  const { ids, mask } = leftPadded(B, T, [1, 0], V, 3);
  const proj = randomArray(B * T * V, 12);
  for (let n = 0; n < B * T; n++) if (!mask[n]) proj.fill(0, n * V, (n + 1) * V);
  const checked = [
    "model.embed_tokens.weight", // tied: gathered rows and the lm_head both contribute
    "model.layers.0.self_attn.q_proj.bias",
    "model.layers.0.self_attn.k_proj.weight",
    "model.layers.0.mlp.down_proj.weight",
    "model.layers.0.input_layernorm.weight",
  ];
  const params = model.params();
  for (const n of checked) params.get(n)!.requiresGrad = true;
  const x = inputs(B, T, ids, mask);
  const logits = model.forward(x.ids, {
    positionIds: x.positionIds,
    attentionMask: x.attentionMask,
  });
  backward(sum(mul(logits, Tensor.from(proj, [B, T, V]))));
  const loss = (w: Map<string, Float32Array>) => {
    const l = refLogits(config, w, { inputIds: ids, batch: B, seqLen: T, attentionMask: mask });
    let s = 0;
    for (let i = 0; i < l.length; i++) s += l[i] * proj[i];
    return s;
  };
  for (const name of checked) {
    const grad = await params.get(name)!.grad!.toArray();
    const base = weights.get(name)!;
    // A few entries per tensor (including a row of the embedding that a prompt token uses).
    const picks = name.includes("embed") ? [ids[1] * 32 + 3, 5 * 32 + 1] : [0, 7, base.length - 1];
    for (const i of picks) {
      const eps = 1e-2, orig = base[i];
      base[i] = orig + eps;
      const fp = loss(weights);
      base[i] = orig - eps;
      const fm = loss(weights);
      base[i] = orig;
      assertClose([grad[i]], [(fp - fm) / (2 * eps)], {
        atol: 2e-3,
        rtol: 2e-2,
        label: `${name}[${i}]`,
      });
    }
  }
  model.dispose();
});

gpuTest("random init is deterministic, HF-like, and round-trips through toArrays", async () => {
  const config = tinyModelConfig(TINY_LLAMA);
  const a = await CausalLM.random(config, { seed: 3 }).toArrays();
  const b = await CausalLM.random(config, { seed: 3 }).toArrays();
  assert.deepEqual([...a.keys()], [...weightShapes(config).keys()]);
  assert.deepEqual(a.get("lm_head.weight"), b.get("lm_head.weight"));
  const w = a.get("model.layers.1.mlp.up_proj.weight")!;
  const std = Math.sqrt(w.reduce((s, v) => s + v * v, 0) / w.length);
  assert.ok(Math.abs(std - 0.02) < 0.002, `std ${std}`);
  assert.ok(a.get("model.norm.weight")!.every((v) => v === 1));
  assert.ok(a.get("model.layers.0.self_attn.o_proj.bias")!.every((v) => v === 0));
});

gpuTest("bad inputs name the op, shapes and dtypes", () => {
  const config = tinyModelConfig(TINY_QWEN2);
  const model = CausalLM.random(config, { seed: 1 });
  const ids = Tensor.from(new Int32Array(6), [2, 3], "i32");
  const f = Tensor.from(new Float32Array(6), [2, 3]);
  const short = Tensor.from(new Int32Array(4), [2, 2], "i32");
  assert.throws(
    () => model.forward(ids, { positionIds: f, attentionMask: ids }),
    /hidden: expected i32 tensors of one shape \[B, T\], got inputIds i32 \[2, 3\], positionIds f32 \[2, 3\]/,
  );
  assert.throws(
    () => model.forward(ids, { positionIds: ids, attentionMask: short }),
    /attentionMask i32 \[2, 2\]/,
  );
  const weights = tinyWeights(config, { seed: 1, init: "varied" });
  weights.delete("model.layers.1.mlp.up_proj.weight");
  assert.throws(
    () => CausalLM.fromTensors(config, weights),
    /missing weights model.layers.1.mlp.up_proj.weight/,
  );
  model.dispose();
});

gpuTest("f16 weights (where the GPU has shader-f16) stay close to the f32 reference", async () => {
  for (const config of [tinyModelConfig(TINY_QWEN2), tinyModelConfig(TINY_LLAMA)]) {
    const B = 2, T = 5, V = config.vocabSize;
    const weights = tinyWeights(config, { seed: 13, init: "varied" });
    const model = CausalLM.fromTensors(config, weights, { dtype: "f16" });
    assert.equal(model.params().get("model.layers.0.mlp.up_proj.weight")!.dtype, "f16");
    const { ids, mask } = leftPadded(B, T, [1, 0], V, 2);
    const x = inputs(B, T, ids, mask);
    const logits = model.forward(x.ids, {
      positionIds: x.positionIds,
      attentionMask: x.attentionMask,
    });
    const ref = refLogits(config, weights, {
      inputIds: ids,
      batch: B,
      seqLen: T,
      attentionMask: mask,
    });
    assertClose(validRows(await logits.toArray(), mask, V), validRows(ref, mask, V), {
      atol: 3e-2,
      rtol: 3e-2,
      label: "f16 logits",
    });
    const cache = model.createCache(B, T + 1, mask);
    const last = await model.prefill(cache, x.ids, x).toArray();
    const want = [...ref.subarray((T - 1) * V, T * V), ...ref.subarray((2 * T - 1) * V, 2 * T * V)];
    assertClose(last, want, { atol: 3e-2, rtol: 3e-2, label: "f16 prefill" });
    cache.dispose();
    model.dispose();
  }
}, { f16: true });
