/**
 * PEFT's lora_dropout on the adapter branch: training forwards drop the branch's input with a
 * mask re-drawn (not stored) in the backward, inference forwards do not, and a checkpointed
 * layer's recompute draws the forward's mask.
 */
import assert from "node:assert/strict";
import type { ModelConfig } from "../io/mod.ts";
import { backward, dropoutRef, mul, noGrad, sum, Tensor } from "../tensor/mod.ts";
import { assertClose, gpuTest, leftPadded, randomArray } from "../testing/mod.ts";
import { CausalLM } from "./causal_lm.ts";
import { initLora, type LoraPair, loraSettings } from "./lora.ts";
import { loraLinear } from "./lora_linear.ts";
import { positionIdsFromMask } from "./ref_model.ts";
import { TINY_QWEN2, tinyModelConfig, tinyWeights } from "./tiny_model.ts";

/** [m, k] @ [k, n] on the CPU, op(.) by transposes. */
function mm(
  a: Float32Array,
  b: Float32Array,
  m: number,
  k: number,
  n: number,
  tA = false,
  tB = false,
) {
  const out = new Float32Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let acc = 0;
      for (let q = 0; q < k; q++) {
        acc += (tA ? a[q * m + i] : a[i * k + q]) * (tB ? b[j * k + q] : b[q * n + j]);
      }
      out[i * n + j] = acc;
    }
  }
  return out;
}

const tol = { atol: 1e-5, rtol: 1e-4 };

gpuTest("loraLinear with lora_dropout: forward and gradients as the masked reference", async () => {
  const N = 6, inF = 10, outF = 7, r = 3, p = 0.3, seed = 77, s = 2;
  const x = randomArray(N * inF, 1), w = randomArray(outF * inF, 2);
  const a = randomArray(r * inF, 3), b = randomArray(outF * r, 4), g = randomArray(N * outF, 5);
  const X = Tensor.from(x, [N, inF]), W = Tensor.from(w, [outF, inF]);
  const pair: LoraPair = {
    a: Tensor.from(a, [r, inF]),
    b: Tensor.from(b, [outF, r]),
    scale: s,
    dropout: p,
    dropoutSeed: () => seed,
  };
  for (const t of [X, pair.a, pair.b]) t.requiresGrad = true;
  const y = loraLinear(X, W, null, pair);
  backward(y, Tensor.from(g, [N, outF]));

  const xd = dropoutRef(x, p, seed);
  const low = mm(xd, a, N, inF, r, false, true); // [N, r]
  const base = mm(x, w, N, inF, outF, false, true);
  const up = mm(low, b, N, r, outF, false, true);
  assertClose(await y.toArray(), base.map((v, i) => v + s * up[i]), { ...tol, label: "y" });
  const dl = mm(g, b, N, outF, r).map((v) => s * v); // [N, r]
  const dB = mm(g, low, outF, N, r, true).map((v) => s * v);
  assertClose(await pair.b.grad!.toArray(), dB, { ...tol, label: "dB" });
  assertClose(await pair.a.grad!.toArray(), mm(dl, xd, r, N, inF, true), { ...tol, label: "dA" });
  const viaA = dropoutRef(mm(dl, a, N, r, inF), p, seed);
  const dx = mm(g, w, N, outF, inF).map((v, i) => v + viaA[i]);
  assertClose(await X.grad!.toArray(), dx, { ...tol, label: "dx" });

  // Off the tape (old log-probs, rollout) the branch reads x itself.
  const yInf = await noGrad(() => loraLinear(X, W, null, pair)).toArray();
  const upInf = mm(mm(x, a, N, inF, r, false, true), b, N, r, outF, false, true);
  assertClose(yInf, base.map((v, i) => v + s * upInf[i]), { ...tol, label: "inference" });
});

gpuTest("lora_dropout: a checkpointed model's gradients equal the plain backward's", async () => {
  const config: ModelConfig = tinyModelConfig({ ...TINY_QWEN2, numHiddenLayers: 2 });
  const B = 2, T = 5, V = config.vocabSize;
  const base = tinyWeights(config, { seed: 3, init: "varied" });
  const settings = { ...loraSettings({ rank: 2, alpha: 4 }), dropout: 0.25 };
  const arrays = initLora(config, settings, 4);
  for (const [i, v] of [...arrays.values()].entries()) v.b.set(randomArray(v.b.length, 50 + i));
  const { ids, mask } = leftPadded(B, T, [0, 1], V, 6);
  const c = Tensor.from(randomArray(B * T * V, 7), [B, T, V]);
  const grads = async (checkpointing: boolean) => {
    const model = CausalLM.fromTensors(config, base, { lora: { settings, arrays } });
    model.gradientCheckpointing = checkpointing;
    const trainable = model.trainable();
    for (const t of trainable.values()) t.requiresGrad = true;
    const logits = model.forward(Tensor.from(ids, [B, T], "i32"), {
      positionIds: Tensor.from(positionIdsFromMask(mask, B, T), [B, T], "i32"),
      attentionMask: Tensor.from(mask, [B, T], "i32"),
    });
    backward(sum(mul(logits, c)));
    const out = new Map<string, Float32Array>();
    for (const [k, t] of trainable) out.set(k, await t.grad!.toArray() as Float32Array);
    model.dispose();
    return out;
  };
  const plain = await grads(false), recomputed = await grads(true);
  // Same masks: equal up to the summation order of the GPU's products (an H100 gave one entry
  // 2.3e-4 apart, relative to itself); other masks move the gradients by a large share.
  for (const [k, v] of plain) {
    const scale = v.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    assertClose(recomputed.get(k)!, v, { atol: 1e-4 * scale, rtol: 1e-4, label: k });
  }
  // The masks matter: without dropout the gradients differ.
  const noDrop = { ...settings, dropout: 0 };
  const model = CausalLM.fromTensors(config, base, { lora: { settings: noDrop, arrays } });
  const t = [...model.trainable()][0][1];
  for (const u of model.trainable().values()) u.requiresGrad = true;
  const logits = model.forward(Tensor.from(ids, [B, T], "i32"), {
    positionIds: Tensor.from(positionIdsFromMask(mask, B, T), [B, T], "i32"),
    attentionMask: Tensor.from(mask, [B, T], "i32"),
  });
  backward(sum(mul(logits, c)));
  const key = [...model.trainable()][0][0];
  const ref = plain.get(key)!, scale = ref.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  const got = (await t.grad!.toArray()) as Float32Array;
  const moved = got.reduce((m, v, i) => Math.max(m, Math.abs(v - ref[i])), 0);
  assert.ok(moved > 1e-2 * scale, `dropout changes the gradients (${moved} of ${scale})`);
  model.dispose();
});
