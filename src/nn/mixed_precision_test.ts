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
  "mixed precision: log-probs and gradients close to f32 (tolerance 2e-2 of the largest)",
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
    for (const [name, g] of full.grads) {
      const scale = g.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      assertClose(mixed.grads.get(name)!, g, { atol: 2e-2 * scale, rtol: 0, label: name });
    }
  },
  { f16: true },
);
