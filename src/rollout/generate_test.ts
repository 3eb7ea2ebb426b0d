import assert from "node:assert/strict";
import type { ModelConfig } from "../io/mod.ts";
import { CausalLM } from "../nn/mod.ts";
import { positionIdsFromMask, refLogits, type RefWeights } from "../nn/mod.ts";
import { TINY_QWEN2, tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import { assertClose, gpuTest, leftPadded } from "../testing/mod.ts";
import { gpu, type KernelSpan } from "../gpu/mod.ts";
import { linearNormPolicy, qkvLinearPolicy } from "../tensor/mod.ts";
import { generate, type GenerateOptions } from "./generate.ts";
import { tokenLogProb } from "./ref_sampler.ts";

const B = 2, P = 5, R = 6;

function setup(seed = 31) {
  const config = tinyModelConfig(TINY_QWEN2);
  const weights = tinyWeights(config, { seed: seed, init: "varied" });
  const model = CausalLM.fromTensors(config, weights);
  const { ids, mask } = leftPadded(B, P, [2, 0], config.vocabSize, 8);
  const base: GenerateOptions = {
    inputIds: ids,
    attentionMask: mask,
    batch: B,
    promptLength: P,
    responseLength: R,
    doSample: false,
    eosTokenIds: [],
    padTokenId: 0,
  };
  return { config, weights, model, ids, mask, base };
}

/** Logits of the reference at the last position of prompt + response[:t]. [V] */
function refNext(
  config: ModelConfig,
  w: RefWeights,
  prompt: Int32Array,
  mask: Int32Array,
  resp: ArrayLike<number>,
): Float32Array {
  const T = prompt.length + resp.length;
  const ids = Int32Array.from([...prompt, ...Array.from(resp)]);
  const m = Int32Array.from([...mask, ...new Array(resp.length).fill(1)]);
  const logits = refLogits(config, w, { inputIds: ids, batch: 1, seqLen: T, attentionMask: m });
  const V = config.vocabSize;
  return Float32Array.from(logits.subarray((T - 1) * V, T * V));
}

gpuTest("greedy generation is deterministic and matches reference recomputation", async () => {
  const { config, weights, model, ids, mask, base } = setup();
  const a = await generate(model, base);
  const b = await generate(model, { ...base, checkEvery: 2 });
  assert.deepEqual(a.responses, b.responses);
  assert.ok(a.responseMask.every((m) => m === 1));
  for (let r = 0; r < B; r++) {
    const resp: number[] = [];
    for (let t = 0; t < R; t++) {
      const logits = refNext(
        config,
        weights,
        ids.subarray(r * P, (r + 1) * P),
        mask.subarray(r * P, (r + 1) * P),
        resp,
      );
      resp.push(logits.indexOf(Math.max(...logits)));
    }
    assert.deepEqual([...a.responses.subarray(r * R, (r + 1) * R)], resp, `row ${r}`);
  }
  model.dispose();
});

gpuTest("decoding with norms and rotations fused into split sums: the same tokens", async () => {
  const { model, base } = setup(33);
  const o = { ...base, returnLogProbs: true };
  const plain = await generate(model, o);
  const count = (spans: KernelSpan[], kernel: string) =>
    spans.filter((s) => s.kernel.startsWith(kernel + ":")).length;
  const run = async (rope: boolean) => {
    qkvLinearPolicy.rope = rope;
    const spans: KernelSpan[] = [];
    let out: Awaited<ReturnType<typeof generate>> | null = null;
    await gpu().profile(async () => void (out = await generate(model, o)), { spans });
    return { out: out!, spans };
  };
  // A CPU adapter's products do not split K by themselves.
  linearNormPolicy.splits = qkvLinearPolicy.splits = 2;
  try {
    const fused = await run(true), apart = await run(false);
    const passes = model.config.numHiddenLayers * R; // the prefill, then R - 1 decode steps
    // per layer o_proj with its norm and down_proj with the next (the last: the final norm)
    assert.equal(count(fused.spans, "splitk_rmsnorm"), 2 * passes, "every pass fused both pairs");
    assert.equal(count(fused.spans, "rmsnorm"), R, "one standalone norm per pass");
    assert.equal(count(fused.spans, "qkv_split_sum"), 0, "q/k/v made in the rotation's pass");
    assert.equal(count(apart.spans, "qkv_split_sum"), passes);
    assert.deepEqual(fused.out.responses, apart.out.responses);
    assert.deepEqual(fused.out.logProbs, apart.out.logProbs, "bit for bit");
    assert.deepEqual(fused.out.responses, plain.responses);
    assertClose(fused.out.logProbs!, plain.logProbs!, { atol: 1e-4, label: "log-probs" });
  } finally {
    linearNormPolicy.splits = qkvLinearPolicy.splits = null;
    qkvLinearPolicy.rope = true;
    model.dispose();
  }
});

gpuTest("EOS ends a response: mask covers it, pad follows, all-finished stops early", async () => {
  const { model, base } = setup();
  const greedy = await generate(model, base);
  const eos = greedy.responses[0]; // row 0's first token
  const out = await generate(model, { ...base, eosTokenIds: [eos], padTokenId: 1, checkEvery: 1 });
  assert.deepEqual([...out.responses.subarray(0, R)], [eos, 1, 1, 1, 1, 1]);
  assert.deepEqual([...out.responseMask.subarray(0, R)], [1, 0, 0, 0, 0, 0]);
  const row1 = [...greedy.responses.subarray(R, 2 * R)];
  const cut = row1.indexOf(eos);
  const len = cut < 0 ? R : cut + 1;
  assert.deepEqual([...out.responseMask.subarray(R, 2 * R)], row1.map((_, t) => (t < len ? 1 : 0)));
  if (cut >= 0) assert.ok(out.steps <= len + 1, `ran ${out.steps} steps for length ${len}`);
  else assert.equal(out.steps, R);
  model.dispose();
});

gpuTest("steps run while the finished flags come back change no token", async () => {
  const { model, base } = setup();
  const greedy = await generate(model, base);
  // Every row's first token ends it: all finish after one step.
  const eos = [greedy.responses[0], greedy.responses[R]];
  const opts = { ...base, eosTokenIds: eos, padTokenId: 1 };
  const lockStep = await generate(model, { ...opts, checkEvery: 1 });
  assert.ok(lockStep.steps <= 2, `checkEvery 1 ran ${lockStep.steps} steps`);
  for (const checkEvery of [2, 3]) {
    const out = await generate(model, { ...opts, checkEvery });
    assert.deepEqual(out.responses, lockStep.responses, `checkEvery ${checkEvery}`);
    assert.deepEqual(out.responseMask, lockStep.responseMask);
    // Seen at the first check (step checkEvery), after at most checkEvery - 1 more steps.
    assert.ok(out.steps <= 2 * checkEvery - 1, `checkEvery ${checkEvery} ran ${out.steps} steps`);
  }
  model.dispose();
});

gpuTest("sampling n per prompt: shapes, repeated prompts, seeded, log-probs match", async () => {
  const { config, weights, model, ids, mask, base } = setup(4);
  const opts = {
    ...base,
    n: 3,
    doSample: true,
    temperature: 0.8,
    topK: 20,
    topP: 0.95,
    seed: 7,
    returnLogProbs: true,
  };
  const a = await generate(model, opts);
  const b = await generate(model, opts);
  const c = await generate(model, { ...opts, seed: 8 });
  assert.equal(a.responses.length, B * 3 * R);
  assert.deepEqual(a.responses, b.responses);
  assert.notDeepEqual(a.responses, c.responses);
  assert.deepEqual([...a.promptIds.subarray(2 * P, 3 * P)], [...ids.subarray(0, P)]);
  assert.deepEqual([...a.attentionMask.subarray(3 * P, 4 * P)], [...mask.subarray(P, 2 * P)]);
  assert.deepEqual([...a.positionIds.subarray(0, P)], [
    ...positionIdsFromMask(mask, B, P).subarray(0, P),
  ]);
  for (const row of [0, 4]) {
    const b0 = Math.floor(row / 3);
    const resp = a.responses.subarray(row * R, (row + 1) * R);
    const got: number[] = [], want: number[] = [];
    for (let t = 0; t < R; t++) {
      const logits = refNext(
        config,
        weights,
        ids.subarray(b0 * P, (b0 + 1) * P),
        mask.subarray(b0 * P, (b0 + 1) * P),
        resp.subarray(0, t),
      );
      got.push(a.logProbs![row * R + t]);
      want.push(tokenLogProb(logits, resp[t], 0.8));
    }
    assertClose(got, want, { atol: 2e-4, rtol: 1e-3, label: `log-probs row ${row}` });
  }
  model.dispose();
});

gpuTest("a shared prefill gives each of n samples what its own prefill gives", async () => {
  const { model, base } = setup(5);
  const opts = { ...base, n: 3, doSample: true, temperature: 0.9, seed: 3, returnLogProbs: true };
  const shared = await generate(model, opts);
  const own = await generate(model, { ...opts, sharedPrefill: false });
  assert.deepEqual(shared.responses, own.responses);
  assertClose(shared.logProbs!, own.logProbs!, { atol: 1e-6, rtol: 1e-6, label: "log-probs" });
  // the three samples of a prompt differ (their own random streams), yet start from one prompt
  const rowsOf0 = [0, 1, 2].map((r) => [...shared.responses.subarray(r * R, (r + 1) * R)]);
  assert.ok(new Set(rowsOf0.map((r) => r.join())).size > 1, "samples of a prompt all equal");
  model.dispose();
});

gpuTest("generate rejects bad prompts with the reason", async () => {
  const { model, base } = setup();
  await assert.rejects(
    () => generate(model, { ...base, batch: 3 }),
    /must hold \[3, 5\] = 15 values/,
  );
  const right = { ...base, attentionMask: Int32Array.from(base.attentionMask).fill(0, 4, 5) };
  await assert.rejects(() => generate(model, right), /prompt 0 does not end in a real token/);
  const big = { ...base, inputIds: Int32Array.from(base.inputIds).fill(99, 0, 1) };
  await assert.rejects(() => generate(model, big), /token id 99 at \[0, 0\] is outside \[0, 37\)/);
  model.dispose();
});

gpuTest("a KV cache of halves: log-probs near the reference, f32 cache unchanged", async () => {
  const { config, weights, model, ids, mask, base } = setup(4);
  const opts = { ...base, doSample: true, temperature: 0.8, seed: 3, returnLogProbs: true };
  const full = await generate(model, opts);
  const again = await generate(model, { ...opts, kvDtype: "f32" });
  assert.deepEqual(again.logProbs, full.logProbs, "kvDtype f32 is the default, bit for bit");
  const half = await generate(model, { ...opts, kvDtype: "f16" });
  assert.notDeepEqual(half.logProbs, full.logProbs, "keys and values were rounded to halves");
  for (let row = 0; row < B; row++) {
    const resp = half.responses.subarray(row * R, (row + 1) * R);
    const got: number[] = [], want: number[] = [];
    for (let t = 0; t < R; t++) {
      const prompt = ids.subarray(row * P, (row + 1) * P);
      const logits = refNext(
        config,
        weights,
        prompt,
        mask.subarray(row * P, (row + 1) * P),
        resp.subarray(0, t),
      );
      got.push(half.logProbs![row * R + t]);
      want.push(tokenLogProb(logits, resp[t], 0.8));
    }
    // Halves carry about 3 significant digits.
    assertClose(got, want, { atol: 1e-2, rtol: 1e-2, label: `log-probs row ${row}` });
  }
  model.dispose();
});
