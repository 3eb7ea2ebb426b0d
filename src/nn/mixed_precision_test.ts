/**
 * A tiny model's training pass under mixed precision (f16 operands in every linear layer and the
 * LM head) against the same pass in f32: log-probs and the masters' gradients agree to f16's
 * rounding. Needs shader-f16 (ignored on the CPU adapter).
 */
import assert from "node:assert/strict";
import { backward, sum, Tensor } from "../tensor/mod.ts";
import { assertClose, gpuTest } from "../testing/mod.ts";
import { CausalLM } from "./causal_lm.ts";
import { HalfWeights } from "./half_weights.ts";
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
