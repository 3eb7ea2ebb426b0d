import assert from "node:assert/strict";
import { backward } from "../tensor/mod.ts";
import { sum } from "../tensor/mod.ts";
import { Tensor } from "../tensor/mod.ts";
import { assertClose, gpuTest, leftPadded } from "../testing/mod.ts";
import { Critic } from "./critic.ts";
import { positionIdsFromMask, refHidden, refValues } from "./ref_model.ts";
import { TINY_QWEN2, tinyModelConfig, tinyWeights } from "./tiny_model.ts";

function batch(B: number, T: number, vocab: number) {
  const { ids, mask } = leftPadded(B, T, [2, 0], vocab, 6);
  return {
    ids,
    mask,
    idsT: Tensor.from(ids, [B, T], "i32"),
    opts: {
      positionIds: Tensor.from(positionIdsFromMask(mask, B, T), [B, T], "i32"),
      attentionMask: Tensor.from(mask, [B, T], "i32"),
    },
  };
}

gpuTest("critic values equal the reference and the head gradient is the hidden sum", async () => {
  const config = tinyModelConfig(TINY_QWEN2);
  const B = 2, T = 6;
  const weights = tinyWeights(config, { seed: 17, init: "varied", critic: true });
  const critic = Critic.fromTensors(config, weights);
  const x = batch(B, T, config.vocabSize);
  const head = critic.params().get("score.weight")!;
  head.requiresGrad = true;
  const values = critic.values(x.idsT, x.opts);
  assert.deepEqual(values.shape, [B, T]);
  const ref = { inputIds: x.ids, batch: B, seqLen: T, attentionMask: x.mask };
  const want = refValues(config, weights, ref);
  const got = await values.toArray();
  const valid = (a: ArrayLike<number>) => Array.from(a).filter((_, i) => x.mask[i] === 1);
  assertClose(valid(got), valid(want), { atol: 1e-4, rtol: 1e-3, label: "values" });
  backward(sum(values));
  // d sum(values) / d score.weight = sum over all positions of the hidden state.
  const hidden = refHidden(config, weights, ref);
  const C = config.hiddenSize;
  const expected = new Float64Array(C);
  for (let n = 0; n < B * T; n++) for (let c = 0; c < C; c++) expected[c] += hidden[n * C + c];
  assertClose(await head.grad!.toArray(), expected, { atol: 1e-3, rtol: 1e-3, label: "grad" });
  critic.dispose();
});

gpuTest("a critic from an actor's weights starts at zero values and has no lm_head", async () => {
  const config = tinyModelConfig({ ...TINY_QWEN2, tieWordEmbeddings: false });
  const actor = tinyWeights(config, { seed: 2, init: "varied" });
  const critic = Critic.fromActor(config, actor);
  assert.ok(!critic.params().has("lm_head.weight"));
  assert.deepEqual(critic.params().get("score.weight")!.shape, [1, config.hiddenSize]);
  const x = batch(2, 4, config.vocabSize);
  assert.ok((await critic.values(x.idsT, x.opts).toArray()).every((v) => v === 0));
  const small = Critic.fromActor(config, actor, { headStd: 0.1, seed: 1 });
  const arrays = await small.toArrays();
  assert.ok(arrays.get("score.weight")!.some((v) => v !== 0));
  assert.throws(() => Critic.fromTensors(config, actor), /Critic: missing weights score.weight/);
  critic.dispose();
  small.dispose();
});
