/**
 * Packed sequences (use_remove_padding) against the padded forward on ragged batches (left-padded
 * prompts, right-padded responses): the same log-probs, entropies and values at real tokens, zeros
 * at the padding, and the same gradients of every parameter, with and without gradient
 * checkpointing and with LoRA adapters on or off.
 */
import assert from "node:assert/strict";
import { backward, IGNORE_INDEX, mul, mulScalar, sum, Tensor, zeroGrad } from "../tensor/mod.ts";
import { add } from "../tensor/mod.ts";
import { assertClose, gpuTest, randomArray, rng } from "../testing/mod.ts";
import { CausalLM } from "./causal_lm.ts";
import { Critic } from "./critic.ts";
import { initLora, loraSettings } from "./lora.ts";
import { type Packing, packingOf, scoredRowsOf } from "./packing.ts";
import { positionIdsFromMask } from "./ref_model.ts";
import { TINY_QWEN2, tinyModelConfig, tinyWeights } from "./tiny_model.ts";

const B = 3, P = 7, R = 6, T = P + R;
const config = tinyModelConfig({ ...TINY_QWEN2, numHiddenLayers: 2, intermediateSize: 44 });

/** Prompts left-padded by [0, 3, 5], responses right-padded to lengths [6, 2, 4]. */
function ragged() {
  const r = rng(7), pads = [0, 3, 5], lengths = [6, 2, 4];
  const ids = new Int32Array(B * T), mask = new Int32Array(B * T);
  const targets = new Int32Array(B * T).fill(-100);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const real = t < P ? t >= pads[b] : t - P < lengths[b];
      mask[b * T + t] = real ? 1 : 0;
      ids[b * T + t] = real ? 3 + Math.floor(r() * (config.vocabSize - 3)) : 1;
    }
    for (let t = P; t < P + lengths[b]; t++) targets[b * T + t - 1] = ids[b * T + t];
  }
  return { ids, mask, targets };
}

function inputs(packed: boolean) {
  const x = ragged();
  return {
    ids: Tensor.from(x.ids, [B, T], "i32"),
    positionIds: Tensor.from(positionIdsFromMask(x.mask, B, T), [B, T], "i32"),
    attentionMask: Tensor.from(x.mask, [B, T], "i32"),
    targets: Tensor.from(x.targets, [B * T], "i32"),
    real: Tensor.from(Float32Array.from(x.mask), [B * T]),
    mask: x.mask,
    targetIds: x.targets,
    packing: packed ? packingOf(x.mask, [B, T]) : undefined,
  };
}

/** Outputs at real tokens and the pads' outputs, then every gradient of `params`. */
async function run(model: CausalLM, packed: boolean, o: { adapters?: boolean } = {}) {
  const x = inputs(packed);
  const out = model.tokenLogProbs(x.ids, {
    ...x,
    withEntropy: true,
    withSumPiSquared: true,
    disableAdapters: o.adapters === false,
  });
  assert.deepEqual(out.logProbs.shape, [B * T]);
  // the loss reads real tokens only (as the PPO losses do through the response mask)
  const loss = add(sum(out.logProbs), mulScalar(sum(mul(out.entropy!, x.real)), 0.3));
  const read = async (t: Tensor) => [...(await t.toArray())];
  const [lp, ent, spp] = [
    await read(out.logProbs),
    await read(out.entropy!),
    await read(out.sumPiSquared!),
  ];
  backward(loss);
  const grads = new Map<string, Float32Array>();
  for (const [name, p] of model.trainable()) {
    grads.set(name, (await p.grad!.toArray()) as Float32Array);
  }
  zeroGrad(model.trainable().values());
  const at = (v: number[], real: boolean) => v.filter((_, i) => (x.mask[i] !== 0) === real);
  return {
    real: { lp: at(lp, true), ent: at(ent, true), spp: at(spp, true) },
    pads: [...at(lp, false), ...at(ent, false), ...at(spp, false)],
    grads,
  };
}

async function comparePackedPadded(model: CausalLM, o: { adapters?: boolean } = {}) {
  for (const p of model.trainable().values()) p.requiresGrad = true;
  const padded = await run(model, false, o);
  const packed = await run(model, true, o);
  for (const k of ["lp", "ent", "spp"] as const) {
    assertClose(packed.real[k], padded.real[k], { atol: 1e-5, rtol: 1e-5, label: k });
  }
  // the packed path ran: nothing is computed at the pads, where the padded pass has entropies
  assert.ok(packed.pads.every((v) => v === 0), "packed outputs are 0 at the padding");
  assert.ok(padded.pads.some((v) => v !== 0), "the padded pass computes the pads");
  assert.equal(packed.grads.size, padded.grads.size);
  for (const [name, g] of padded.grads) {
    assertClose(packed.grads.get(name)!, g, { atol: 1e-5, rtol: 1e-4, label: name });
  }
}

gpuTest("packed sequences: the padded log-probs, entropies and gradients", async () => {
  const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 2, init: "varied" }));
  await comparePackedPadded(model);
  model.dispose();
});

gpuTest("packed sequences with gradient checkpointing: the padded gradients", async () => {
  const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 3, init: "varied" }));
  model.gradientCheckpointing = true;
  await comparePackedPadded(model);
  model.dispose();
});

gpuTest("packed sequences with LoRA: adapters on (gradients) and off (the reference)", async () => {
  const settings = loraSettings({ rank: 2, alpha: 4 });
  const arrays = initLora(config, settings, 5);
  for (const [i, pair] of [...arrays.values()].entries()) pair.b.set(randomArray(pair.b.length, i));
  const w = tinyWeights(config, { seed: 4, init: "varied" });
  const model = CausalLM.fromTensors(config, w, { lora: { settings, arrays } });
  await comparePackedPadded(model);
  const x = [inputs(false), inputs(true)];
  const off = x.map((t) => model.tokenLogProbs(t.ids, { ...t, disableAdapters: true }).logProbs);
  const on = model.tokenLogProbs(x[1].ids, x[1]).logProbs;
  const [offPadded, offPacked, onPacked] = await Promise.all([...off, on].map((t) => t.toArray()));
  assertClose(offPacked, offPadded, { atol: 1e-5, rtol: 1e-5, label: "adapters off" });
  assert.ok(onPacked.some((v, i) => Math.abs(v - offPacked[i]) > 1e-4), "the adapters matter");
  model.dispose();
});

gpuTest("packed sequences in the critic: the padded values and gradients", async () => {
  const w = tinyWeights(config, { seed: 6, init: "varied", critic: true });
  w.get("score.weight")!.set(randomArray(config.hiddenSize, 9));
  const results = [];
  for (const packed of [false, true]) {
    const net = Critic.fromTensors(config, w);
    net.gradientCheckpointing = packed;
    for (const p of net.params().values()) p.requiresGrad = true;
    const x = inputs(packed);
    const v = net.values(x.ids, x);
    assert.deepEqual(v.shape, [B, T]);
    const values = [...await v.toArray()];
    backward(sum(mul(v.reshape([B * T]), x.real)));
    const grads = new Map<string, Float32Array>();
    for (const [n, p] of net.params()) grads.set(n, (await p.grad!.toArray()) as Float32Array);
    results.push({ values, grads, mask: x.mask });
    net.dispose();
  }
  const [padded, packed] = results;
  const real = (v: number[]) => v.filter((_, i) => padded.mask[i] !== 0);
  assertClose(real(packed.values), real(padded.values), {
    atol: 1e-5,
    rtol: 1e-5,
    label: "values",
  });
  assert.ok(packed.values.every((v, i) => padded.mask[i] !== 0 || v === 0), "0 at the padding");
  for (const [name, g] of padded.grads) {
    assertClose(packed.grads.get(name)!, g, { atol: 1e-5, rtol: 1e-4, label: name });
  }
});

gpuTest("packingOf: rows of the real tokens, the inverse, and a shape check", async () => {
  const mask = Int32Array.from([0, 1, 1, 1, 0, 0]);
  const p: Packing = packingOf(mask, [2, 3]);
  assert.equal(p.tokens, 3);
  assert.deepEqual([...await p.index.toArray()], [1, 2, 3]);
  assert.deepEqual([...await p.inverse.toArray()], [-1, 0, 1, 2, -1, -1]);
  assert.throws(() => packingOf(mask, [2, 2]), /not \[2, 2\]/);
  const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 1 }));
  const ids = Tensor.from(new Int32Array(4), [2, 2], "i32");
  assert.throws(
    () => model.hidden(ids, { positionIds: ids, attentionMask: ids, packing: p }),
    /packing of \[2, 3\] does not fit inputIds \[2, 2\]/,
  );
  model.dispose();
});

/** Outputs and gradients with the head on every position or on the scored ones only. */
async function runScored(model: CausalLM, packed: boolean, scored: boolean) {
  const x = inputs(packed);
  const rows = scoredRowsOf(x.targetIds, [B, T], packed ? x.mask : null);
  const out = model.tokenLogProbs(x.ids, {
    ...x,
    scored: scored ? rows : null,
    withEntropy: true,
    withSumPiSquared: true,
  });
  const isScored = Float32Array.from(x.targetIds, (t) => t === IGNORE_INDEX ? 0 : 1);
  const weight = Tensor.from(isScored, [B * T]);
  backward(add(sum(out.logProbs), mulScalar(sum(mul(out.entropy!, weight)), 0.3)));
  const outputs = await Promise.all(
    [out.logProbs, out.entropy!, out.sumPiSquared!].map(async (t) => [...await t.toArray()]),
  );
  const grads = new Map<string, Float32Array>();
  for (const [name, p] of model.trainable()) {
    grads.set(name, (await p.grad!.toArray()) as Float32Array);
  }
  zeroGrad(model.trainable().values());
  const at = (v: number[], on: boolean) => v.filter((_, i) => (isScored[i] === 1) === on);
  return { on: outputs.map((v) => at(v, true)), off: outputs.flatMap((v) => at(v, false)), grads };
}

gpuTest("scored rows: the head on the response positions gives the same results", async () => {
  const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 8, init: "varied" }));
  for (const p of model.trainable().values()) p.requiresGrad = true;
  for (const packed of [false, true]) {
    const all = await runScored(model, packed, false);
    const some = await runScored(model, packed, true);
    ["lp", "ent", "spp"].forEach((label, k) =>
      assertClose(some.on[k], all.on[k], { atol: 1e-5, rtol: 1e-5, label: `${label} ${packed}` })
    );
    assert.ok(some.off.every((v) => v === 0), "nothing is computed off the scored positions");
    assert.ok(all.off.some((v) => v !== 0), "the full pass computes the prompts' entropies");
    for (const [name, g] of all.grads) {
      assertClose(some.grads.get(name)!, g, { atol: 1e-5, rtol: 1e-4, label: name });
    }
  }
  model.dispose();
});

gpuTest("scoredRowsOf: rows of the trunk's output, positions, and padding refused", async () => {
  const targets = Int32Array.from([-100, 5, 6, -100, -100, 7]);
  const padded = scoredRowsOf(targets, [2, 3])!;
  assert.equal(padded.rows, padded.positions);
  assert.deepEqual([...await padded.positions.index.toArray()], [1, 2, 5]);
  // packed: the real tokens are positions 1, 2, 3, 5, so the scored ones are rows 0, 1 and 3
  const mask = Int32Array.from([0, 1, 1, 1, 0, 1]);
  const packed = scoredRowsOf(targets, [2, 3], mask)!;
  assert.deepEqual([packed.rows.batch, packed.rows.length, packed.rows.tokens], [1, 4, 3]);
  assert.deepEqual([...await packed.rows.index.toArray()], [0, 1, 3]);
  assert.deepEqual([...await packed.positions.inverse.toArray()], [-1, 0, 1, -1, -1, 2]);
  assert.equal(scoredRowsOf(new Int32Array(6).fill(-100), [2, 3]), null);
  assert.throws(
    () => scoredRowsOf(targets, [2, 3], Int32Array.from([1, 1, 1, 1, 1, 0])),
    /position 5 has a target but is padding/,
  );
});
