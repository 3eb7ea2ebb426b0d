/**
 * Every family and RoPE variant, end to end: its config.json as transformers writes it is parsed,
 * written to a folder with our writer (which must keep every key as it was), read back, and the
 * GPU decoder's next-token log-probs compared with the CPU reference's. The largest log-prob
 * error per family is printed.
 */
import assert from "node:assert/strict";
import {
  floatTensor,
  parseModelConfig,
  readModelFolder,
  tensorToFloat32,
  writeModelFolder,
} from "../io/mod.ts";
import { gpu, type KernelSpan } from "../gpu/mod.ts";
import {
  linearNormPolicy,
  qkvLinearPolicy,
  swigluLinearPolicy,
  swigluSplitPolicy,
  swigluWovenPolicy,
  Tensor,
} from "../tensor/mod.ts";
import { assertClose, gpuTest, leftPadded } from "../testing/mod.ts";
import { CausalLM } from "./causal_lm.ts";
import { positionIdsFromMask, refLogits } from "./ref_model.ts";
import { TINY_FAMILIES } from "./tiny_families.ts";
import { tinyWeights } from "./tiny_model.ts";
import { weightShapes } from "./weights.ts";

/** log p(ids[t+1] | ids[..t]) at every t where both tokens are real. */
function nextTokenLogProbs(
  logits: ArrayLike<number>,
  ids: Int32Array,
  mask: Int32Array,
  T: number,
  V: number,
) {
  const out: number[] = [];
  for (let n = 0; n < ids.length; n++) {
    if ((n + 1) % T === 0 || !mask[n] || !mask[n + 1]) continue;
    let max = -Infinity, sum = 0;
    for (let v = 0; v < V; v++) max = Math.max(max, logits[n * V + v]);
    for (let v = 0; v < V; v++) sum += Math.exp(logits[n * V + v] - max);
    out.push(logits[n * V + ids[n + 1]] - max - Math.log(sum));
  }
  return out;
}

async function writeAndRead(name: string, json: Record<string, unknown>, seed: number) {
  const config = parseModelConfig(json, { file: name });
  const weights = tinyWeights(config, { seed, init: "varied" });
  const dir = await Deno.makeTempDir();
  const shapes = weightShapes(config);
  const tensors = new Map([...weights].map(([n, w]) => [n, floatTensor(shapes.get(n)!, w)]));
  await writeModelFolder(`${dir}/m`, { config, tensors });
  const written = JSON.parse(await Deno.readTextFile(`${dir}/m/config.json`));
  for (const [k, v] of Object.entries(json)) {
    assert.deepEqual(written[k], v, `${name}: ${k} rewritten`);
  }
  for (const k of ["rope_theta", "rope_parameters", "torch_dtype", "dtype"]) {
    assert.equal(k in written, k in json, `${name}: ${k} added or dropped`);
  }
  const folder = await readModelFolder(`${dir}/m`);
  await Deno.remove(dir, { recursive: true });
  const read = new Map(
    [...folder.tensors].map(([n, t]) => [n, Float32Array.from(tensorToFloat32(t))]),
  );
  return { config: folder.config, weights: read };
}

let seed = 100;
for (const [name, json] of Object.entries(TINY_FAMILIES)) {
  const s = seed++;
  gpuTest(
    `architecture ${name}: folder round trip, GPU log-probs equal the CPU reference`,
    async () => {
      const { config, weights } = await writeAndRead(name, json, s);
      const B = 2, V = config.vocabSize;
      // Past max_position_embeddings when it is small (dynamic NTK then rescales).
      const T = Math.min(12, config.maxPositionEmbeddings + 4);
      const { ids, mask } = leftPadded(B, T, [0, 3], V, s);
      const model = CausalLM.fromTensors(config, weights);
      const logits = model.forward(Tensor.from(ids, [B, T], "i32"), {
        positionIds: Tensor.from(positionIdsFromMask(mask, B, T), [B, T], "i32"),
        attentionMask: Tensor.from(mask, [B, T], "i32"),
      });
      const ref = refLogits(config, weights, {
        inputIds: ids,
        batch: B,
        seqLen: T,
        attentionMask: mask,
      });
      const got = nextTokenLogProbs(await logits.toArray(), ids, mask, T, V);
      const want = nextTokenLogProbs(ref, ids, mask, T, V);
      const err = got.reduce((m, g, i) => Math.max(m, Math.abs(g - want[i])), 0);
      console.log(`  log-prob max |GPU - CPU reference| ${name}: ${err.toExponential(2)}`);
      assertClose(got, want, { atol: 1e-4, rtol: 0, label: `${name} log-probs` });
      model.dispose();
    },
  );
}

/** Prefill then decode steps through the KV cache against the CPU reference's full forward. */
async function decodeAgainstReference(name: string): Promise<void> {
  const { config, weights } = await writeAndRead(name, TINY_FAMILIES[name], 7);
  const model = CausalLM.fromTensors(config, weights);
  const B = 2, P = 4, T = 8, V = config.vocabSize;
  const { ids, mask } = leftPadded(B, T, [2, 0], V, 11);
  const pos = positionIdsFromMask(mask, B, T);
  const take = (a: Int32Array, t0: number, t1: number) =>
    Int32Array.from(
      { length: B * (t1 - t0) },
      (_, i) => a[Math.floor(i / (t1 - t0)) * T + t0 + (i % (t1 - t0))],
    );
  const cache = model.createCache(B, T, take(mask, 0, P));
  const steps = [
    await model.prefill(cache, Tensor.from(take(ids, 0, P), [B, P], "i32"), {
      positionIds: Tensor.from(take(pos, 0, P), [B, P], "i32"),
      attentionMask: Tensor.from(take(mask, 0, P), [B, P], "i32"),
    }).toArray(),
  ];
  for (let t = P; t < T; t++) {
    const step = model.decodeStep(
      cache,
      Tensor.from(take(ids, t, t + 1), [B, 1], "i32"),
      Tensor.from(take(pos, t, t + 1), [B, 1], "i32"),
    );
    steps.push(await step.toArray());
  }
  const full = refLogits(config, weights, {
    inputIds: ids,
    batch: B,
    seqLen: T,
    attentionMask: mask,
  });
  steps.forEach((got, s) => {
    const want = new Float64Array(B * V);
    for (let b = 0; b < B; b++) {
      want.set(full.subarray((b * T + P - 1 + s) * V, (b * T + P + s) * V), b * V);
    }
    assertClose(got, want, { atol: 2e-4, rtol: 1e-3, label: `${name} step ${s}` });
  });
  cache.dispose();
  model.dispose();
}

gpuTest(
  "architecture yarn and llama3 scaling: KV-cache decoding equals the full forward",
  async () => {
    for (const name of ["qwen2, yarn (5.x)", "llama 3.1 (4.x)"]) await decodeAgainstReference(name);
  },
);

gpuTest("KV-cache decoding with norms and the q/k/v sum in split sums, each bias", async () => {
  // Forced K splits (a CPU adapter's decode products do not split): o_proj and down_proj norm in
  // their split sums, q/k/v sums in the rotation (not Qwen3's, whose q/k norms come between);
  // biases on q/k/v (Qwen2.5), on o (this Qwen3) and on every projection (this Llama). Without
  // the fused few-row MLP, gate and up run as one split woven GEMM, or as two split GEMMs, each
  // summed in one pass with the SwiGLU.
  linearNormPolicy.splits = qkvLinearPolicy.splits = swigluSplitPolicy.splits = 2;
  const names = [
    "qwen2.5 (5.x)",
    "qwen3 (5.x, o bias, untied)",
    "llama, attention and mlp bias (4.x)",
  ];
  try {
    for (const [fusedMlp, woven] of [[true, true], [false, true], [false, false]]) {
      swigluLinearPolicy.enabled = fusedMlp;
      swigluWovenPolicy.enabled = woven;
      for (const name of names) {
        const spans: KernelSpan[] = [];
        await gpu().profile(() => decodeAgainstReference(name), { spans });
        const ran = (part: string) => spans.filter((x) => x.kernel.includes(part)).length;
        assert.ok(ran("splitk_rmsnorm:") > 0, `${name}: norms in the split sums`);
        const rotated = ran("FROM_SPLITS=true");
        assert.equal(rotated > 0, !name.startsWith("qwen3"), `${name}: q/k/v sums in the rotation`);
        if (rotated > 0) assert.equal(ran("qkv_split_sum:"), 0, `${name}: no q/k/v split sum`);
        const pass = ran(`swiglu_split_sum:main_${woven ? "woven" : "pair"}`);
        assert.equal(pass > 0, !fusedMlp, `${name}: gate/up pass, woven ${woven}`);
      }
    }
  } finally {
    linearNormPolicy.splits = qkvLinearPolicy.splits = swigluSplitPolicy.splits = null;
    swigluLinearPolicy.enabled = swigluWovenPolicy.enabled = true;
  }
});
