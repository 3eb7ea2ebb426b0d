/**
 * A tiny model's training pass under mixed precision (f16 operands in every linear layer and the
 * LM head, attention rounded as torch's fp16 attention) against the same pass in f32: log-probs
 * and the masters' gradients agree to f16's rounding. Needs shader-f16 (ignored on the CPU
 * adapter).
 */
import assert from "node:assert/strict";
import { attentionPolicy, backward, sum, Tensor } from "../tensor/mod.ts";
import { assertClose, gpuTest } from "../testing/mod.ts";
import { CausalLM } from "./causal_lm.ts";
import { HalfWeights } from "./half_weights.ts";
import { packingOf } from "./packing.ts";
import { TINY_QWEN2, tinyModelConfig, tinyWeights } from "./tiny_model.ts";

gpuTest(
  "mixed precision: log-probs and gradients close to f32 (2e-2 of the largest gradient, cosine)",
  async () => {
    const config = tinyModelConfig({ ...TINY_QWEN2, numHiddenLayers: 2 });
    const B = 2, T = 9;
    const ids = Int32Array.from({ length: B * T }, (_, i) => (i * 7 + 3) % config.vocabSize);
    const targets = Int32Array.from({ length: B * T }, (_, i) => (i * 5 + 1) % config.vocabSize);
    const pos = Int32Array.from({ length: B * T }, (_, i) => i % T);
    const run = async (half: boolean) => {
      const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 3, init: "varied" }));
      if (half) model.mixedPrecision = new HalfWeights();
      const params = model.params();
      for (const p of params.values()) p.requiresGrad = true;
      const out = model.tokenLogProbs(Tensor.from(ids, [B, T], "i32"), {
        positionIds: Tensor.from(pos, [B, T], "i32"),
        attentionMask: Tensor.from(new Int32Array(B * T).fill(1), [B, T], "i32"),
        targets: Tensor.from(targets, [B, T], "i32"),
      });
      backward(sum(out.logProbs));
      const grads = new Map<string, Float32Array>();
      for (const [name, p] of params) grads.set(name, new Float32Array(await p.grad!.toArray()));
      const lp = new Float32Array(await out.logProbs.toArray());
      if (half) assert.ok((model.mixedPrecision?.size ?? 0) > 0, "the f16 copies were used");
      model.dispose();
      return { lp, grads };
    };
    const full = await run(false), mixed = await run(true);
    assertClose(mixed.lp, full.lp, { atol: 2e-2, rtol: 0, label: "log-probs" });
    assert.notDeepEqual(mixed.lp, full.lp, "f16 operands round the products");
    // Against the largest gradient of the model, not of each tensor: a bias gradient is a sum over
    // positions that mostly cancels (k_proj's bias under RoPE), so its own largest entry is no
    // scale for f16 rounding error. Each tensor must also point the same way (cosine).
    let largest = 0;
    for (const g of full.grads.values()) {
      for (const v of g) largest = Math.max(largest, Math.abs(v));
    }
    for (const [name, g] of full.grads) {
      const m = mixed.grads.get(name)!;
      assertClose(m, g, { atol: 2e-2 * largest, rtol: 0, label: name });
      let dot = 0, nm = 0, ng = 0;
      for (let i = 0; i < g.length; i++) {
        [dot, nm, ng] = [dot + m[i] * g[i], nm + m[i] ** 2, ng + g[i] ** 2];
      }
      if (ng > 0) {
        assert.ok(dot / Math.sqrt(nm * ng) > 0.999, `${name}: cosine ${dot / Math.sqrt(nm * ng)}`);
      }
    }
  },
  { f16: true },
);

gpuTest(
  "mixed precision: the padded and packed passes ask attention for f16 (the GEMM path only)",
  () => {
    const config = tinyModelConfig({ ...TINY_QWEN2, numHiddenLayers: 1 });
    const B = 2, T = 5;
    const mask = Int32Array.from([0, 0, 1, 1, 1, 1, 1, 1, 1, 1]);
    const pos = Int32Array.from(mask, (_, i) => Math.max(0, (i % T) - (i < T ? 2 : 0)));
    const options = {
      positionIds: Tensor.from(pos, [B, T], "i32"),
      attentionMask: Tensor.from(mask, [B, T], "i32"),
    };
    const ids = Tensor.from(Int32Array.from(mask, (m, i) => m * (3 + i)), [B, T], "i32");
    const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 4 }));
    const saved = attentionPolicy.gemm;
    attentionPolicy.gemm = "never"; // the row kernels, which have no f16 rounding
    try {
      assert.equal(model.hidden(ids, options).shape.join(), `${B},${T},${config.hiddenSize}`);
      model.mixedPrecision = new HalfWeights();
      for (const packing of [undefined, packingOf(mask, [B, T])]) {
        assert.throws(
          () => model.hidden(ids, { ...options, packing }),
          /precision f16 runs on the GEMM path only/,
          packing ? "packed" : "padded",
        );
      }
    } finally {
      attentionPolicy.gemm = saved;
      model.dispose();
    }
  },
  { f16: true },
);
