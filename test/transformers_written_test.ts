// Folders written by transformers 5.17 itself (`save_pretrained`, test/transformers_written.py):
// Qwen2 (tied), Qwen3 (head_dim), Llama 3.1 rope scaling, linear scaling, Qwen2 YaRN, Mistral and a
// bfloat16 Llama. Each loads through the library surface; our next-token log-probs of fixed ids
// match transformers' (f32, eager) and so does the argmax after every position.
import assert from "node:assert/strict";
import { generateTokens, loadModel, responseLogProbs } from "../src/mod.ts";
import { gpuTest } from "../src/testing/mod.ts";

const DIR = new URL("./fixtures/transformers_written", import.meta.url).pathname;

interface Expected {
  transformers: string;
  ids: number[];
  folders: Record<string, { class: string; next_token_logprobs: number[]; argmax: number[] }>;
}

gpuTest("folders saved by transformers load to transformers' log-probs", async () => {
  const expected: Expected = JSON.parse(Deno.readTextFileSync(`${DIR}/expected.json`));
  const ids = expected.ids;
  const rows: string[] = [];
  for (const [name, want] of Object.entries(expected.folders)) {
    const model = await loadModel(`${DIR}/${name}`);
    const { logProbs } = await responseLogProbs(model, [{
      prompt: ids.slice(0, 1),
      response: ids.slice(1),
    }]);
    const err = Math.max(...want.next_token_logprobs.map((x, i) => Math.abs(x - logProbs[0][i])));
    rows.push(`${name}: max |log-prob - transformers| ${err.toExponential(2)}`);
    assert.ok(err < 2e-4, `${name}: ${err}`);
    // Greedy first tokens after prefixes of several lengths (left-padded together).
    const lengths = [3, 10, 25, 40, 79];
    const { responses } = await generateTokens(model, lengths.map((k) => ids.slice(0, k)), {
      maxNewTokens: 1,
    });
    const eos = model.tokenizer.eosTokenId;
    lengths.forEach((k, i) => {
      const ours = responses[i][0] ?? eos; // an EOS is cut from the response
      assert.equal(ours, want.argmax[k - 1], `${name}: greedy after ${k} tokens`);
    });
  }
  console.log(rows.join("\n"));
});
