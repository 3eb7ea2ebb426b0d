import assert from "node:assert/strict";
import { loadConfig } from "../../config/mod.ts";
import type { PromptItem } from "../../data/mod.ts";
import { charTokenizerFiles, HfTokenizer } from "../../io/mod.ts";
import type { TrainerParts, TurnRolloutFn } from "../parts.ts";
import { gen } from "./gen.ts";

Deno.test("gen with multi_turn: onProgress moves as the conversations end", async () => {
  const f = charTokenizerFiles();
  const tokenizer = new HfTokenizer(f.tokenizerJson, f.tokenizerConfig);
  const config = loadConfig("ppo_trainer", {
    overrides: [
      "actor_rollout_ref.rollout.multi_turn.enable=true",
      "data.return_raw_chat=true",
      "data.max_prompt_length=64",
      "data.max_response_length=16",
      "actor_rollout_ref.rollout.response_length=16",
    ],
  });
  const heard: number[][] = [];
  let inFlight = 0;
  // Every turn says one token then EOS; conversation k's turn takes 10 * k ms, so they end apart.
  const turnRollout: TurnRolloutFn = (_o, use) =>
    use(async (req) => {
      inFlight++;
      await new Promise((ok) => setTimeout(ok, 10 * req.sample));
      inFlight--;
      return {
        tokens: [tokenizer.encode("a", { addSpecialTokens: false })[0], tokenizer.eosTokenId],
      };
    });
  const items: PromptItem[] = [0, 1].map((index) => ({
    index,
    inputIds: [],
    dataSource: "test",
    groundTruth: "",
    extraInfo: {},
    rawPrompt: [{ role: "user", content: `q${index}` }],
  }));
  // gen's multi-turn path reads only these parts.
  const parts = { config, tokenizer, turnRollout, print: () => {} } as unknown as TrainerParts;
  const batch = await gen(parts, items, {
    step: 1,
    n: 2,
    validation: false,
    uidPrefix: "s1",
    onProgress: (done, total) => heard.push([done, total, inFlight]),
  });
  assert.equal(batch.size, 4);
  // [done, total, turns still in flight]: each report comes while the later ones still run.
  assert.deepEqual(heard, [[1, 4, 3], [2, 4, 2], [3, 4, 1], [4, 4, 0]]);
});
