import assert from "node:assert/strict";
import type { ModelConfig } from "../io/mod.ts";
import { add, attention, backward, rmsNorm, rope, swiglu, Tensor } from "../tensor/mod.ts";
import { assertClose, gpuTest, randomArray } from "../testing/mod.ts";
import {
  type Attend,
  decoderLayer,
  type LayerParams,
  layerParams,
  type RopeCall,
  view,
} from "./layers.ts";
import type { LoraPair } from "./lora.ts";
import { loraLinear } from "./lora_linear.ts";
import { TINY_LLAMA, TINY_QWEN2, tinyModelConfig, tinyWeights } from "./tiny_model.ts";
import { weightShapes } from "./weights.ts";

/** decoderLayer written with separate residual adds: what the fused epilogues must reproduce. */
function unfusedLayer(
  h: Tensor,
  w: LayerParams,
  ctx: { config: ModelConfig; positions: Tensor; attend: Attend; rope: RopeCall },
): Tensor {
  const c = ctx.config, [B, T] = h.shape, eps = c.rmsNormEps;
  const D = c.headDim, Hq = c.numAttentionHeads, Hkv = c.numKeyValueHeads;
  const lin = (x: Tensor, m: string, wt: Tensor, b: Tensor | null) =>
    loraLinear(x, wt, b, w.lora.get(m) ?? null);
  const x = rmsNorm(h, w.inputNorm, { eps });
  const q = view(lin(x, "q_proj", w.q, w.qBias), [B, T, Hq, D]);
  const k = view(lin(x, "k_proj", w.k, w.kBias), [B, T, Hkv, D]);
  const v = view(lin(x, "v_proj", w.v, w.vBias), [B, T, Hkv, D]);
  const att = ctx.attend(rope(q, ctx.positions, ctx.rope), rope(k, ctx.positions, ctx.rope), v);
  const h1 = add(h, lin(view(att, [B, T, Hq * D]), "o_proj", w.o, w.oBias));
  const x2 = rmsNorm(h1, w.postNorm, { eps });
  const act = swiglu(lin(x2, "gate_proj", w.gate, w.gateBias), lin(x2, "up_proj", w.up, w.upBias));
  return add(h1, lin(act, "down_proj", w.down, w.downBias));
}

const configs: [string, ModelConfig][] = [
  ["qwen2, q/k/v bias", tinyModelConfig(TINY_QWEN2)],
  ["llama, o_proj and MLP biases", tinyModelConfig({ ...TINY_LLAMA, mlpBias: true })],
];

/** Layer 0 of a tiny model, with LoRA adapters on o_proj and down_proj when asked. */
function setup(config: ModelConfig, lora: boolean) {
  const arrays = tinyWeights(config, { seed: 3, init: "varied" });
  const shapes = weightShapes(config);
  const weights = new Map([...arrays].map(([n, a]) => [n, Tensor.from(a, shapes.get(n)!)]));
  const pairs = new Map<string, LoraPair>();
  if (lora) {
    const r = 2;
    for (
      const [m, [o, inF]] of [[
        "self_attn.o_proj",
        shapes.get("model.layers.0.self_attn.o_proj.weight")!,
      ], ["mlp.down_proj", shapes.get("model.layers.0.mlp.down_proj.weight")!]] as const
    ) {
      pairs.set(`model.layers.0.${m}`, {
        a: Tensor.from(randomArray(r * inF, o), [r, inF]),
        b: Tensor.from(randomArray(o * r, inF), [o, r]),
        scale: 0.5,
        dropout: 0,
        dropoutSeed: () => 0,
      });
    }
  }
  return layerParams(config, weights, 0, pairs);
}

for (const [name, config] of configs) {
  for (const lora of [false, true]) {
    gpuTest(
      `decoderLayer equals its unfused composition: ${name}${lora ? ", LoRA" : ""}`,
      async () => {
        const B = 2, T = 5, C = config.hiddenSize;
        const w = setup(config, lora);
        const ctx = {
          config,
          positions: Tensor.from(
            Int32Array.from({ length: B * T }, (_, i) => i % T),
            [B, T],
            "i32",
          ),
          attend: (q: Tensor, k: Tensor, v: Tensor) => attention(q, k, v),
          rope: { theta: config.ropeTheta, scale: 1 },
          adapters: true,
        };
        const h0 = randomArray(B * T * C, 7), g = randomArray(B * T * C, 8);
        const run = async (layer: typeof decoderLayer) => {
          const h = Tensor.from(h0, [B, T, C]);
          h.requiresGrad = true;
          const out = layer(h, w, ctx);
          const y = await out.toArray();
          backward(out, Tensor.from(g, out.shape));
          return { y, dh: await h.grad!.toArray() };
        };
        const fused = await run(decoderLayer), plain = await run(unfusedLayer);
        if (lora) {
          // The adapter's product is accumulated after the residual: rounding order differs.
          assertClose(fused.y, plain.y, { atol: 1e-5, rtol: 1e-5, label: "y" });
        } else assert.deepEqual(fused.y, plain.y);
        assertClose(fused.dh, plain.dh, { atol: 1e-5, rtol: 1e-5, label: "dh" });
      },
    );
  }
}
