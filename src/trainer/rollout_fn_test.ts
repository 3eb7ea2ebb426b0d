import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../config/mod.ts";
import { charTokenizer } from "../io/mod.ts";
import { CausalLM, TINY_QWEN2, tinyModelConfig, tinyWeights } from "../nn/mod.ts";
import { assertClose, gpuTest, leftPadded } from "../testing/mod.ts";
import { buildTrainerParts } from "./build.ts";
import type { RolloutOptions } from "./parts.ts";
import { rolloutFor } from "./rollout_fn.ts";

const B = 3, P = 7, R = 9, N = 2;

function setup() {
  const tokenizer = charTokenizer();
  // The engine tests' model and prompts: no near-ties between greedy candidates.
  const config = tinyModelConfig(TINY_QWEN2);
  const model = CausalLM.fromTensors(config, tinyWeights(config, { seed: 31, init: "varied" }));
  const { ids, mask } = leftPadded(B, P, [3, 0, 5], config.vocabSize, 8);
  const prompts = { inputIds: ids, attentionMask: mask, batch: B, promptLength: P };
  const options: RolloutOptions = {
    n: N,
    responseLength: R,
    temperature: 1,
    topK: 0,
    topP: 1,
    doSample: false,
    seed: 5,
    returnLogProbs: true,
  };
  return { tokenizer, model, prompts, options };
}

gpuTest(
  "trainer rollout through the engine: greedy equals generate's token for token",
  async () => {
    const s = setup();
    const pool = { maxNumSeqs: 4, kvCacheTokens: null, key: "k", prefixCaching: true };
    const plain = { mergeLora: false };
    const byGenerate = rolloutFor(s.model, s.tokenizer, [], { ...plain, engine: null });
    const byEngine = rolloutFor(s.model, s.tokenizer, [], { ...plain, engine: pool });
    const want = await byGenerate(s.prompts, s.options);
    const got = await byEngine(s.prompts, s.options);
    assert.deepEqual(got.responses, want.responses);
    assert.deepEqual(got.responseMask, want.responseMask);
    assertClose(got.logProbs!, want.logProbs!, { atol: 1e-5, rtol: 1e-5, label: "log-probs" });
    // An EOS (row 2's fourth greedy token): masks 1 up to and including it, pad and 0 after.
    const eos = want.responses[2 * N * R + 3];
    const cutWant = await rolloutFor(s.model, s.tokenizer, [eos], { ...plain, engine: null })(
      s.prompts,
      s.options,
    );
    const cut = await rolloutFor(s.model, s.tokenizer, [eos], { ...plain, engine: pool })(
      s.prompts,
      s.options,
    );
    assert.deepEqual(cut.responses, cutWant.responses);
    assert.deepEqual(cut.responseMask, cutWant.responseMask);
    for (let r = 0; r < B * N; r++) {
      const row = [...cut.responses.subarray(r * R, r * R + R)];
      const at = row.indexOf(eos);
      const len = at >= 0 ? at + 1 : R;
      const mask = [...cut.responseMask.subarray(r * R, r * R + R)];
      assert.deepEqual(mask, row.map((_, i) => (i < len ? 1 : 0)), `mask of row ${r}`);
      assert.ok(row.slice(len).every((t) => t === s.tokenizer.padTokenId), `pad after EOS ${r}`);
      const lp = cut.logProbs!.subarray(r * R, r * R + R);
      assert.ok(lp.subarray(len).every((x) => x === 0) && lp.subarray(0, len).every((x) => x < 0));
    }
    assert.ok(cut.responseMask.includes(0), "the EOS ended some rows");
    s.model.dispose();
  },
);

gpuTest(
  "trainer rollout through the engine: sampled rows are reproducible for a seed",
  async () => {
    const s = setup();
    // A pool of 3 blocks of 16 for 6 sequences, 2 at a time: a prompt block and one each.
    const small = { maxNumSeqs: 2, kvCacheTokens: 48, key: "k", prefixCaching: true };
    const rollout = (engine: typeof small | undefined) =>
      rolloutFor(s.model, s.tokenizer, [], { mergeLora: false, engine });
    const sampled = { ...s.options, doSample: true, temperature: 1.3 };
    const a = await rollout(undefined)(s.prompts, sampled);
    const b = await rollout(small)(s.prompts, sampled);
    assert.deepEqual(b.responses, a.responses, "the same draws whatever the pool");
    assertClose(b.logProbs!, a.logProbs!, { atol: 1e-5, rtol: 1e-5, label: "log-probs" });
    // The n samples of a prompt differ; another seed draws other tokens.
    assert.notDeepEqual(a.responses.subarray(0, R), a.responses.subarray(R, 2 * R));
    const c = await rollout(undefined)(s.prompts, { ...sampled, seed: 6 });
    assert.notDeepEqual(c.responses, a.responses);
    const noLp = await rollout(undefined)(s.prompts, { ...sampled, returnLogProbs: false });
    assert.equal(noLp.logProbs, undefined);
    assert.deepEqual(noLp.responses, a.responses);
    s.model.dispose();
  },
);

Deno.test("rollout.kv_cache_tokens too small for one sequence is an error naming the key", () => {
  const key = "actor_rollout_ref.rollout.kv_cache_tokens";
  const cfg = loadConfig("ppo_trainer", {
    overrides: [
      "data.max_prompt_length=20",
      "data.max_response_length=30",
      `${key}=40`,
      "actor_rollout_ref.rollout.max_num_seqs=8",
    ],
    skipPathChecks: true,
  });
  assert.equal(cfg.actor_rollout_ref.rollout.max_num_seqs, 8);
  const tokenizer = charTokenizer();
  const config = tinyModelConfig({ vocabSize: tokenizer.vocabSize });
  assert.throws(
    () =>
      buildTrainerParts({
        config: cfg,
        tokenizer,
        actor: { config, tensors: tinyWeights(config, { seed: 1 }) },
        trainItems: [],
        valItems: [],
        tracking: { log: () => {}, close() {} },
      }),
    (e: unknown) =>
      e instanceof ConfigError && e.key === key && /at least 50/.test((e as Error).message),
  );
});
