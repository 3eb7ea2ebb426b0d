/**
 * enable_gradient_checkpointing on a decoder: the same loss and gradients as the taped forward,
 * with a lower peak of GPU memory in use (the pool's count) over forward + backward.
 */
import assert from "node:assert/strict";
import { gpu } from "../gpu/mod.ts";
import { backward, mulScalar, sum, Tensor, zeroGrad } from "../tensor/mod.ts";
import { assertClose, gpuTest, leftPadded, randomArray } from "../testing/mod.ts";
import { CausalLM } from "./causal_lm.ts";
import { Critic } from "./critic.ts";
import { initLora, loraSettings } from "./lora.ts";
import { positionIdsFromMask } from "./ref_model.ts";
import { TINY_QWEN2, tinyModelConfig, tinyWeights } from "./tiny_model.ts";

const B = 4, T = 48;
const config = tinyModelConfig({ ...TINY_QWEN2, numHiddenLayers: 4, intermediateSize: 96 });

function batch() {
  const { ids, mask } = leftPadded(B, T, [0, 5, 2, 9], config.vocabSize, 3);
  const targets = Int32Array.from(ids, (_, i) => (i % T) < T - 1 ? ids[i + 1] : -100);
  return {
    ids: Tensor.from(ids, [B, T], "i32"),
    positionIds: Tensor.from(positionIdsFromMask(mask, B, T), [B, T], "i32"),
    attentionMask: Tensor.from(mask, [B, T], "i32"),
    targets: Tensor.from(targets, [B, T], "i32"),
  };
}

/** Loss, gradients by name and the peak bytes in use over forward + backward. */
async function step(model: CausalLM, checkpointing: boolean) {
  model.gradientCheckpointing = checkpointing;
  const params = model.params();
  for (const p of params.values()) p.requiresGrad = true;
  const x = batch();
  await gpu().sync();
  gpu().pool.resetPeak();
  const base = gpu().pool.inUseBytes;
  const out = model.tokenLogProbs(x.ids, { ...x, withEntropy: true });
  const loss = mulScalar(sum(out.logProbs), -1);
  const value = (await loss.toArray())[0];
  backward(loss);
  await gpu().sync();
  const peak = gpu().pool.peakBytes - base;
  const grads = new Map<string, Float32Array>();
  for (const [name, p] of params) grads.set(name, (await p.grad!.toArray()) as Float32Array);
  zeroGrad(params.values());
  return { value, grads, peak };
}

gpuTest("gradient checkpointing: the same gradients, less memory at the peak", async () => {
  const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 2, init: "varied" }));
  const plain = await step(model, false);
  const ckpt = await step(model, true);
  assertClose([ckpt.value], [plain.value], { atol: 1e-5, label: "loss" });
  for (const [name, g] of plain.grads) {
    assertClose(ckpt.grads.get(name)!, g, { atol: 1e-5, rtol: 1e-4, label: name });
  }
  console.log(
    `peak in use over forward + backward: ${plain.peak} B taped, ${ckpt.peak} B checkpointed`,
  );
  assert.ok(ckpt.peak < 0.75 * plain.peak, `peak ${ckpt.peak} not below ${plain.peak}`);
  model.dispose();
});

gpuTest("gradient checkpointing in the critic trunk: the same gradients", async () => {
  const w = tinyWeights(config, { seed: 4, init: "varied", critic: true });
  const grads = [];
  for (const on of [false, true]) {
    const net = Critic.fromTensors(config, w);
    net.gradientCheckpointing = on;
    for (const p of net.params().values()) p.requiresGrad = true;
    const x = batch();
    backward(sum(net.values(x.ids, x)));
    grads.push(
      new Map(
        await Promise.all(
          [...net.params()].map(async ([n, p]) => [n, await p.grad!.toArray()] as const),
        ),
      ),
    );
    net.dispose();
  }
  for (const [name, g] of grads[0]) {
    assertClose(grads[1].get(name)!, g, { atol: 1e-5, rtol: 1e-4, label: name });
  }
});

gpuTest(
  "gradient checkpointing with LoRA: frozen base, the adapters' gradients unchanged",
  async () => {
    const base = tinyWeights(config, { seed: 7, init: "varied" });
    const s = loraSettings({ rank: 2, alpha: 4 });
    const arrays = initLora(config, s, 8);
    let k = 0;
    for (const x of arrays.values()) x.b.set(randomArray(x.b.length, 90 + k++, -0.2, 0.2));
    const grads = [];
    for (const on of [false, true]) {
      const model = CausalLM.fromTensors(config, base, { lora: { settings: s, arrays } });
      model.gradientCheckpointing = on;
      const trainable = model.trainable();
      for (const p of trainable.values()) p.requiresGrad = true;
      const x = batch();
      const out = model.tokenLogProbs(x.ids, x);
      backward(mulScalar(sum(out.logProbs), -1));
      grads.push(
        new Map(
          await Promise.all(
            [...trainable].map(async ([n, p]) => [n, await p.grad!.toArray()] as const),
          ),
        ),
      );
      model.dispose();
    }
    assert.ok(grads[0].size > 0);
    for (const [name, g] of grads[0]) {
      assert.ok(grads[1].get(name), `${name}: no gradient with checkpointing`);
      assertClose(grads[1].get(name)!, g, { atol: 1e-5, rtol: 1e-4, label: name });
    }
  },
);
