/**
 * Keeps the Deno side of the update parity check runnable and its dump self-consistent: the model
 * folders load back with our loader and give the dumped log-probs / values (and the CPU reference
 * agrees), every case holds a gradient and a weight after the step for every parameter, and our
 * AdamW reference applied to the dumped gradients (clipped by the dumped grad norm) from the
 * folder's weights gives exactly the dumped weights after the step.
 */
import assert from "node:assert/strict";
import {
  type RawTensor,
  readModelFolder,
  readSafetensorsFile,
  tensorToFloat32,
} from "../src/io/mod.ts";
import { CausalLM, Critic, positionIdsFromMask, refLogits } from "../src/nn/mod.ts";
import { adamwRef } from "../src/tensor/mod.ts";
import { computeLogProbs, computeValues } from "../src/trainer/mod.ts";
import { writeUpdateParity } from "./update_parity.ts";
import { PARITY_OPTIM, parityBatch } from "./update_batch.ts";

const f32 = (t: RawTensor) => Float32Array.from(tensorToFloat32({ ...t, data: t.bytes }));
const i32 = (t: RawTensor) => new Int32Array(t.bytes.slice().buffer);

async function readF32(path: string): Promise<Map<string, Float32Array>> {
  const { tensors } = await readSafetensorsFile(path);
  return new Map(tensors.map((t) => [t.name, f32(t)]));
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>, mask?: ArrayLike<number>): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) if (!mask || mask[i]) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
}

Deno.test({
  name: "update parity: the Deno side writes a complete, self-consistent dump",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const manifest = await writeUpdateParity(dir);
      const { rows: B, prompt_length: P, response_length: R } = manifest.batch;
      const raw = (await readSafetensorsFile(`${dir}/batch.safetensors`)).tensors;
      const batch = new Map(raw.map((t) => [t.name, t]));
      const mask = i32(batch.get("response_mask")!);
      const attention = i32(batch.get("attention_mask")!);
      assert.deepEqual(i32(batch.get("position_ids")!), positionIdsFromMask(attention, B, P + R));

      const actor = await readModelFolder(`${dir}/actor`);
      const start = new Map(
        [...actor.tensors].map(([n, t]) => [n, f32({ ...t, name: n, bytes: t.data })]),
      );
      const gen = parityBatch(actor.config.vocabSize, { B, P, R }).batch;
      assert.deepEqual(i32(batch.get("prompts")!), gen.prompts);
      assert.deepEqual(i32(batch.get("responses")!), gen.responses);
      const micro = { microBatchSize: 3, withEntropy: false };
      const model = CausalLM.fromTensors(actor.config, start);
      const { logProbs } = await computeLogProbs(model, gen, micro);
      model.dispose();
      const dumped = f32(batch.get("log_probs")!);
      assert.equal(maxAbsDiff(logProbs, dumped, mask), 0, "the folder gives the dumped log-probs");
      const logits = refLogits(actor.config, start, {
        inputIds: i32(batch.get("input_ids")!),
        batch: B,
        seqLen: P + R,
        attentionMask: attention,
      });
      const V = actor.config.vocabSize, responses = i32(batch.get("responses")!);
      for (let b = 0; b < B; b++) {
        for (let r = 0; r < R; r++) {
          if (!mask[b * R + r]) continue;
          const row = logits.subarray(((b * (P + R)) + P - 1 + r) * V, ((b * (P + R)) + P + r) * V);
          let max = -Infinity, sum = 0;
          for (const x of row) max = Math.max(max, x);
          for (const x of row) sum += Math.exp(x - max);
          const ref = row[responses[b * R + r]] - max - Math.log(sum);
          assert.ok(Math.abs(ref - dumped[b * R + r]) < 1e-4, `log-prob ${b},${r} vs CPU ref`);
        }
      }

      const criticFolder = await readModelFolder(`${dir}/critic`);
      const criticStart = new Map(
        [...criticFolder.tensors].map(([n, t]) => [n, f32({ ...t, name: n, bytes: t.data })]),
      );
      const critic = Critic.fromTensors(criticFolder.config, criticStart);
      const values = await computeValues(
        {
          forward: (ids, f) => critic.values(ids, f),
          params: () => critic.params(),
          toArrays: () => critic.toArrays(),
        },
        gen,
        micro,
      );
      critic.dispose();
      assert.equal(maxAbsDiff(values, f32(batch.get("vpreds")!), mask), 0);

      const cases: [string, Map<string, Float32Array>][] = [
        ["vanilla", start],
        ["gspo", start],
        ["value", criticStart],
      ];
      for (const [name, w0] of cases) {
        const grads = await readF32(`${dir}/${name}/grads.safetensors`);
        const after = await readF32(`${dir}/${name}/after.safetensors`);
        assert.deepEqual([...grads.keys()].sort(), [...w0.keys()].sort(), name);
        assert.deepEqual([...after.keys()].sort(), [...w0.keys()].sort(), name);
        let sq = 0;
        for (const g of grads.values()) for (const x of g) sq += x * x;
        const norm = Math.sqrt(sq);
        const m = manifest.metrics[name as keyof typeof manifest.metrics];
        const ours = m["actor/grad_norm"] ?? m["critic/grad_norm"];
        assert.ok(Math.abs(norm - ours) < 1e-5 * norm, `${name}: grad norm ${norm} vs ${ours}`);
        const gradScale = Math.min(1, manifest.update.gradClip / (norm + 1e-6));
        assert.ok(gradScale < 1, `${name}: the clip is active (norm ${norm})`);
        for (const [n, x0] of w0) {
          const w = x0.slice(), m1 = new Float32Array(w.length), v1 = new Float32Array(w.length);
          adamwRef(w, grads.get(n)!, m1, v1, {
            lr: PARITY_OPTIM.lr,
            beta1: PARITY_OPTIM.betas[0],
            beta2: PARITY_OPTIM.betas[1],
            eps: PARITY_OPTIM.eps,
            weightDecay: PARITY_OPTIM.weight_decay,
            step: 1,
            gradScale,
          });
          assert.ok(maxAbsDiff(w, after.get(n)!) < 1e-6, `${name}: ${n} after the step`);
          assert.ok(maxAbsDiff(x0, after.get(n)!) > PARITY_OPTIM.lr / 2, `${name}: ${n} moved`);
        }
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
