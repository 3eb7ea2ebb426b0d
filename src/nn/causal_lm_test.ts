import assert from "node:assert/strict";
import { gpu } from "../gpu/mod.ts";
import type { ModelConfig } from "../io/mod.ts";
import { Tensor } from "../tensor/mod.ts";
import { assertClose, gpuTest, leftPadded, randomArray } from "../testing/mod.ts";
import { CausalLM } from "./causal_lm.ts";
import { initLora, loraSettings, mergeLoraRef } from "./lora.ts";
import { positionIdsFromMask } from "./ref_model.ts";
import { TINY_LLAMA, TINY_QWEN2, tinyModelConfig, tinyWeights } from "./tiny_model.ts";

const B = 2, T = 6;

function inputs(config: ModelConfig) {
  const { ids, mask } = leftPadded(B, T, [0, 2], config.vocabSize, 3);
  return {
    ids: Tensor.from(ids, [B, T], "i32"),
    positionIds: Tensor.from(positionIdsFromMask(mask, B, T), [B, T], "i32"),
    attentionMask: Tensor.from(mask, [B, T], "i32"),
  };
}

gpuTest("forRollout: the model itself when nothing changes; f16 weights need shader-f16", () => {
  const config = tinyModelConfig(TINY_QWEN2);
  const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 3 }));
  assert.equal(model.forRollout(), model);
  assert.equal(model.withMergedAdapters(), model);
  if (!gpu().hasF16) {
    assert.throws(() => model.forRollout({ f16Weights: true }), /needs? shader-f16/);
  } else {
    const half = CausalLM.fromTensors(config, tinyWeights(config, { seed: 3 }), { dtype: "f16" });
    assert.equal(half.forRollout({ f16Weights: true }), half, "already f16: no copy");
    half.dispose();
  }
  model.dispose();
});

// The CPU adapter has no shader-f16; GPU machines run this one.
gpuTest(
  "the f16 rollout copy is an f16 upload's model, LoRA merged in, source intact",
  async () => {
    for (const family of [TINY_QWEN2, TINY_LLAMA]) {
      const config = tinyModelConfig({ ...family, numHiddenLayers: 2 });
      const base = tinyWeights(config, { seed: 11, init: "varied" });
      const s = loraSettings({ rank: 3, alpha: 6, targetModules: ["k_proj", "gate_proj"] });
      const adapters = initLora(config, s, 12);
      let k = 0;
      for (const x of adapters.values()) x.b.set(randomArray(x.b.length, 31 + k++, -0.2, 0.2));
      const x = inputs(config);
      for (const lora of [false, true]) {
        const model = CausalLM.fromTensors(config, base, {
          lora: lora ? { settings: s, arrays: adapters } : undefined,
        });
        const before = await model.forward(x.ids, x).toArray();
        const copy = model.forRollout({ f16Weights: true });
        assert.notEqual(copy, model);
        assert.equal(copy.lora, null);
        for (const [name, t] of copy.params()) {
          const half = name.endsWith("_proj.weight") || name === "lm_head.weight" ||
            name === "model.embed_tokens.weight";
          assert.equal(t.dtype, half ? "f16" : "f32", `${name} of the rollout copy`);
        }
        const want = CausalLM.fromTensors(
          config,
          lora ? mergeLoraRef(config, base, adapters, s) : base,
          {
            dtype: "f16",
          },
        );
        const label = `${config.modelType} lora=${lora}`;
        assertClose(
          await copy.forward(x.ids, x).toArray(),
          await want.forward(x.ids, x).toArray(),
          {
            atol: 2e-3,
            rtol: 2e-3,
            label,
          },
        );
        copy.dispose();
        want.dispose();
        assert.deepEqual(
          await model.forward(x.ids, x).toArray(),
          before,
          `${label}: source intact`,
        );
        model.dispose();
      }
    }
  },
  { f16: true },
);
