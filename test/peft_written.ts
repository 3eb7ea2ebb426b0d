/**
 * The Deno half of test/peft_written.py: loads the adapter peft saved (OUT/adapter on OUT/base),
 * compares our next-token log-probs with peft's, then saves the adapter again with our writer
 * (OUT/ours) with our log-probs beside it (OUT/ours_expected.json) for `peft_written.py --check`.
 *
 *   deno run -A test/peft_written.ts OUT
 */
import { loadModel, responseLogProbs, saveModel } from "../src/mod.ts";

const out = Deno.args[0];
if (!out) throw new Error("usage: deno run -A test/peft_written.ts OUT");
const expected = JSON.parse(Deno.readTextFileSync(`${out}/expected.json`));
const ids: number[] = expected.ids;
// The python side saves no tokenizer (ids are fixed); lend the base folder the tiny model's.
for (const f of ["tokenizer.json", "tokenizer_config.json"]) {
  try {
    Deno.statSync(`${out}/base/${f}`);
  } catch {
    Deno.copyFileSync(new URL(`../assets/tiny_arith/${f}`, import.meta.url), `${out}/base/${f}`);
  }
}
const model = await loadModel(`${out}/base`, { adapter: `${out}/adapter` });
const seq = [{ prompt: ids.slice(0, 1), response: ids.slice(1) }];
const [lp] = (await responseLogProbs(model, seq)).logProbs;
const err = Math.max(
  ...expected.next_token_logprobs.map((x: number, i: number) => Math.abs(x - lp[i])),
);
console.log(`our log-probs with peft's adapter: max |log-prob - peft| ${err.toExponential(2)}`);
await saveModel(model, `${out}/ours`);
Deno.writeTextFileSync(
  `${out}/ours_expected.json`,
  JSON.stringify({ ids, next_token_logprobs: Array.from(lp) }),
);
if (!(err < 2e-4)) Deno.exit(1);
