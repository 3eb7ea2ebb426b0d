import assert from "node:assert/strict";
import { linearModules, type LoraArrays, type ModelConfig, resolveLoraTargets } from "../io/mod.ts";
import { backward, mul, sum, Tensor } from "../tensor/mod.ts";
import { assertClose, gpuTest, leftPadded, randomArray } from "../testing/mod.ts";
import { CausalLM } from "./causal_lm.ts";
import { Critic } from "./critic.ts";
import { initLora, loraSettings, mergeLoraRef } from "./lora.ts";
import { positionIdsFromMask, refLogits } from "./ref_model.ts";
import { TINY_QWEN2, tinyModelConfig, tinyWeights } from "./tiny_model.ts";

const config: ModelConfig = tinyModelConfig({ ...TINY_QWEN2, numHiddenLayers: 2 });

/** Adapters with B filled too, so that they change the model. */
function randomAdapters(settings: ReturnType<typeof loraSettings>, seed: number): LoraArrays {
  const out = initLora(config, settings, seed);
  let k = 0;
  for (const x of out.values()) x.b.set(randomArray(x.b.length, seed * 31 + k++, -0.2, 0.2));
  return out;
}

function batch(B: number, T: number) {
  const { ids, mask } = leftPadded(B, T, [0, 2], config.vocabSize, 3);
  return {
    ids,
    mask,
    t: {
      ids: Tensor.from(ids, [B, T], "i32"),
      positionIds: Tensor.from(positionIdsFromMask(mask, B, T), [B, T], "i32"),
      attentionMask: Tensor.from(mask, [B, T], "i32"),
    },
  };
}

Deno.test("target_modules: all-linear, a list of short names, a regex, exclude_modules", () => {
  const all = resolveLoraTargets(config, { targetModules: "all-linear", excludeModules: null });
  assert.equal(all.length, 7 * config.numHiddenLayers);
  const qv = resolveLoraTargets(config, {
    targetModules: ["q_proj", "v_proj"],
    excludeModules: null,
  });
  assert.deepEqual(qv, [
    "model.layers.0.self_attn.q_proj",
    "model.layers.0.self_attn.v_proj",
    "model.layers.1.self_attn.q_proj",
    "model.layers.1.self_attn.v_proj",
  ]);
  const re = resolveLoraTargets(config, {
    targetModules: String.raw`.*\.1\.mlp\..*`,
    excludeModules: ["down_proj"],
  });
  assert.deepEqual(re, ["model.layers.1.mlp.gate_proj", "model.layers.1.mlp.up_proj"]);
  assert.throws(
    () => resolveLoraTargets(config, { targetModules: ["c_attn"], excludeModules: null }),
    /target_modules=\["c_attn"\].*selects no linear module/,
  );
  // What PEFT would adapt beyond the decoder's linear layers is an error, not dropped.
  for (const targetModules of [["q_proj", "lm_head"], ["embed_tokens", "v_proj"], ".*"]) {
    assert.throws(
      () => resolveLoraTargets(config, { targetModules, excludeModules: null }),
      /selects (lm_head|model\.embed_tokens), which PEFT would adapt.*drop it from target_modules/,
    );
  }
  const kept = resolveLoraTargets(config, {
    targetModules: ".*",
    excludeModules: String.raw`lm_head|.*embed_tokens`,
  });
  assert.equal(kept.length, 7 * config.numHiddenLayers);
});

Deno.test("fresh adapters: A kaiming-uniform within 1/sqrt(in), B zero", () => {
  const arrays = initLora(config, loraSettings({ rank: 4 }), 3);
  const shapes = linearModules(config);
  for (const [m, { a, b }] of arrays) {
    const bound = 1 / Math.sqrt(shapes.get(m)![1]);
    assert.ok(a.every((x) => Math.abs(x) <= bound) && a.some((x) => Math.abs(x) > bound / 2), m);
    assert.ok(b.every((x) => x === 0), m);
  }
});

Deno.test("merged weights are W + (alpha / r) B A, entry by entry", () => {
  const s = loraSettings({ rank: 2, alpha: 6, targetModules: ["q_proj"] });
  const base = tinyWeights(config, { seed: 1 });
  const adapters = randomAdapters(s, 4);
  const merged = mergeLoraRef(config, base, adapters, s);
  const m = "model.layers.1.self_attn.q_proj";
  const [out, inF] = linearModules(config).get(m)!;
  const { a, b } = adapters.get(m)!;
  for (const [i, j] of [[0, 0], [out - 1, inF - 1], [3, 7]]) {
    const ba = b[i * 2] * a[j] + b[i * 2 + 1] * a[inF + j];
    const w = base.get(`${m}.weight`)![i * inF + j];
    assert.ok(Math.abs(merged.get(`${m}.weight`)![i * inF + j] - (w + 3 * ba)) < 1e-6);
  }
  // Untargeted weights are the base's own arrays.
  const k = "model.layers.1.self_attn.k_proj.weight";
  assert.equal(merged.get(k), base.get(k));
});

gpuTest(
  "LoRA with B = 0 gives the base logits; adapters off gives them exactly",
  async () => {
    const B = 2, T = 6;
    const base = tinyWeights(config, { seed: 2, init: "varied" });
    const plain = CausalLM.fromTensors(config, base);
    const s = loraSettings({ rank: 4 });
    const fresh = CausalLM.fromTensors(config, base, {
      lora: { settings: s, arrays: initLora(config, s) },
    });
    const trained = CausalLM.fromTensors(config, base, {
      lora: { settings: s, arrays: randomAdapters(s, 5) },
    });
    const x = batch(B, T).t;
    const want = await plain.forward(x.ids, x).toArray();
    // Adapters on gate/up keep the unfused MLP, the plain model fuses it (few rows, no grad):
    // the same sums in another order.
    assertClose(await fresh.forward(x.ids, x).toArray(), want, { atol: 1e-5, rtol: 1e-5 });
    assert.deepEqual(await trained.forward(x.ids, { ...x, disableAdapters: true }).toArray(), want);
    const on = await trained.forward(x.ids, x).toArray();
    assert.ok(on.some((v, i) => Math.abs(v - want[i]) > 1e-3), "adapters change the logits");
    for (const m of [plain, fresh, trained]) m.dispose();
  },
);

gpuTest("an adapted model equals the reference forward of the merged weights", async () => {
  const B = 2, T = 6;
  const base = tinyWeights(config, { seed: 6, init: "varied" });
  const s = loraSettings({ rank: 3, alpha: 8, targetModules: ["q_proj", "o_proj", "up_proj"] });
  const adapters = randomAdapters(s, 7);
  const model = CausalLM.fromTensors(config, base, { lora: { settings: s, arrays: adapters } });
  const x = batch(B, T);
  const got = await model.forward(x.t.ids, x.t).toArray();
  const merged = mergeLoraRef(config, base, adapters, s);
  const want = refLogits(config, merged, {
    inputIds: x.ids,
    batch: B,
    seqLen: T,
    attentionMask: x.mask,
  });
  const keep = (v: ArrayLike<number>) =>
    Array.from(v).filter((_, i) => x.mask[Math.floor(i / config.vocabSize)] === 1);
  assertClose(keep(got), keep(want), { atol: 2e-4, rtol: 1e-3, label: "logits" });
  model.dispose();
});

gpuTest(
  "gradients reach only A and B and match finite differences of the merged reference",
  async () => {
    const B = 2, T = 5, V = config.vocabSize;
    const base = tinyWeights(config, { seed: 8, init: "varied" });
    const s = loraSettings({ rank: 2, alpha: 4, targetModules: ["v_proj", "down_proj"] });
    const adapters = randomAdapters(s, 9);
    const model = CausalLM.fromTensors(config, base, { lora: { settings: s, arrays: adapters } });
    const trainable = model.trainable();
    assert.equal(trainable.size, 2 * 2 * config.numHiddenLayers);
    for (const p of trainable.values()) p.requiresGrad = true;
    const x = batch(B, T);
    const c = randomArray(B * T * V, 10);
    const logits = model.forward(x.t.ids, x.t);
    backward(sum(mul(logits, Tensor.from(c, [B, T, V], "f32"))));
    for (const p of model.params().values()) assert.equal(p.grad, null, `${p.label} is frozen`);
    const loss = (arrays: LoraArrays) => {
      const l = refLogits(config, mergeLoraRef(config, base, arrays, s), {
        inputIds: x.ids,
        batch: B,
        seqLen: T,
        attentionMask: x.mask,
      });
      return l.reduce((acc, v, i) => acc + v * c[i], 0);
    };
    const h = 1e-3;
    for (
      const [m, which, idx] of [
        ["model.layers.0.self_attn.v_proj", "a", 5],
        ["model.layers.1.mlp.down_proj", "b", 7],
        ["model.layers.1.self_attn.v_proj", "b", 0],
      ] as const
    ) {
      const key = `base_model.model.${m}.lora_${which.toUpperCase()}.weight`;
      const grad = await trainable.get(key)!.grad!.toArray();
      const shifted = (d: number) => {
        const copy: LoraArrays = new Map(
          [...adapters].map(([k, v]) => [k, { a: v.a.slice(), b: v.b.slice() }]),
        );
        copy.get(m)![which][idx] += d;
        return loss(copy);
      };
      const fd = (shifted(h) - shifted(-h)) / (2 * h);
      assert.ok(
        Math.abs(grad[idx] - fd) <= 2e-3 + 2e-2 * Math.abs(fd),
        `${key}[${idx}]: ${grad[idx]} vs ${fd}`,
      );
    }
    model.dispose();
  },
);

gpuTest(
  "the merged rollout copy decodes like the adapters and leaves the model intact",
  async () => {
    const B = 2, T = 6;
    const base = tinyWeights(config, { seed: 11, init: "varied" });
    const s = loraSettings({ rank: 3, alpha: 6, targetModules: ["k_proj", "gate_proj"] });
    const model = CausalLM.fromTensors(config, base, {
      lora: { settings: s, arrays: randomAdapters(s, 12) },
    });
    const x = batch(B, T).t;
    const want = await model.forward(x.ids, x).toArray();
    const merged = model.withMergedAdapters();
    assert.equal(merged.lora, null);
    assertClose(await merged.forward(x.ids, x).toArray(), want, { atol: 1e-5, rtol: 1e-4 });
    merged.dispose();
    // The source's weights and adapters survive the copy's dispose.
    assert.deepEqual(await model.forward(x.ids, x).toArray(), want);
    model.dispose();
  },
);

gpuTest("a LoRA critic trains its adapters and its value head, nothing else", async () => {
  const B = 2, T = 5;
  const s = loraSettings({ rank: 2, targetModules: ["q_proj"], taskType: "TOKEN_CLS" });
  assert.deepEqual(s.modulesToSave, ["score"]);
  const critic = Critic.fromActor(config, tinyWeights(config, { seed: 13 }), {
    headStd: 0.1,
    lora: { settings: s, arrays: initLora(config, s) },
  });
  const trainable = critic.trainable();
  assert.deepEqual([...trainable.keys()].filter((k) => !k.includes(".lora_")), [
    "score.weight",
    "score.bias",
  ]);
  for (const p of trainable.values()) p.requiresGrad = true;
  const x = batch(B, T).t;
  backward(sum(critic.values(x.ids, x)));
  for (const [name, p] of critic.params()) {
    assert.equal(p.grad !== null, name.startsWith("score."), `${name} gradient`);
  }
  const gb = await trainable.get("base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight")!
    .grad!.toArray();
  assert.ok(gb.some((v) => v !== 0), "B gets a gradient through the value head");
  critic.dispose();
});
