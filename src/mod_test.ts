// The library surface on the shipped checkpoint: generation, response log-probs against the
// plain-TS reference model, and a save that loads back to the same log-probs.
import assert from "node:assert/strict";
import { refLogits } from "./nn/mod.ts";
import { readWeights } from "./trainer/mod.ts";
import { assertClose, gpuTest } from "./testing/mod.ts";
import { chatPromptIds, generateTokens, loadModel, responseLogProbs, saveModel } from "./mod.ts";

const SHIPPED = new URL("../assets/tiny_arith", import.meta.url).pathname;

/** log_softmax of the reference logits at each response token. */
function refResponseLogProbs(
  weights: Awaited<ReturnType<typeof readWeights>>,
  prompt: number[],
  response: number[],
): number[] {
  const ids = Int32Array.from([...prompt, ...response]);
  const T = ids.length, V = weights.config.vocabSize;
  const logits = refLogits(weights.config, weights.tensors, { inputIds: ids, batch: 1, seqLen: T });
  return response.map((tok, i) => {
    const row = logits.subarray((prompt.length + i - 1) * V, (prompt.length + i) * V);
    const m = Math.max(...row);
    const lse = m + Math.log(row.reduce((s, x) => s + Math.exp(x - m), 0));
    return row[tok] - lse;
  });
}

gpuTest("library: generate, score against the reference, save and load back", async () => {
  const model = await loadModel(SHIPPED);
  const chat = (q: string) => chatPromptIds(model, [{ role: "user", content: q }]);
  const prompts = [chat("3+5-2+7="), chat("1+1-4+2=")];
  const { responses, texts } = await generateTokens(model, prompts, { maxNewTokens: 10 });
  assert.equal(responses.length, 2);
  assert.ok(responses.every((r) => r.length > 0), JSON.stringify(texts));
  assert.match(texts[0], /^(#### )?13$/, texts[0]);

  const seqs = prompts.map((p, b) => ({ prompt: p, response: responses[b] }));
  const { logProbs, entropies } = await responseLogProbs(model, seqs, { withEntropy: true });
  const weights = await readWeights(SHIPPED);
  seqs.forEach((s, b) => {
    assert.equal(logProbs[b].length, s.response.length);
    assertClose(logProbs[b], refResponseLogProbs(weights, [...s.prompt], [...s.response]), {
      atol: 2e-4,
      label: `row ${b}`,
    });
    assert.ok(entropies![b].every((e) => e >= 0 && Number.isFinite(e)));
  });

  const dir = Deno.makeTempDirSync({ prefix: "webrl_lib_" });
  await saveModel(model, `${dir}/copy`);
  const again = await responseLogProbs(await loadModel(`${dir}/copy`), seqs);
  seqs.forEach((_, b) => assert.deepEqual(again.logProbs[b], logProbs[b]));
  Deno.removeSync(dir, { recursive: true });
});
