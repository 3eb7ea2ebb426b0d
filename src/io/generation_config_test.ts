import assert from "node:assert/strict";
import {
  generationConfigToJson,
  parseGenerationConfig,
  stopTokenIds,
} from "./generation_config.ts";

Deno.test("generation config: written with HF keys, read back", () => {
  const g = {
    eosTokenId: [151645, 151643],
    padTokenId: 151643,
    doSample: true,
    temperature: 0.7,
    topP: 0.8,
  };
  const json = generationConfigToJson(g);
  assert.deepEqual(json, {
    eos_token_id: [151645, 151643],
    pad_token_id: 151643,
    do_sample: true,
    temperature: 0.7,
    top_p: 0.8,
  });
  assert.deepEqual(
    parseGenerationConfig(JSON.stringify({ ...json, transformers_version: "x" })),
    g,
  );
});

Deno.test("generation config: bad JSON names the file", () => {
  assert.throws(
    () => parseGenerationConfig("[", { file: "m/generation_config.json" }),
    /m\/generation_config\.json: not valid JSON/,
  );
});

Deno.test("stopTokenIds: the tokenizer's EOS and every EOS id of both configs, once each", () => {
  // Qwen2.5-Instruct: tokenizer EOS <|im_end|> 151645; generation_config [151645, 151643].
  assert.deepEqual(
    stopTokenIds(151645, { generationConfig: { eosTokenId: [151645, 151643] }, configEos: 151643 }),
    [151645, 151643],
  );
  assert.deepEqual(stopTokenIds(1, { generationConfig: null, configEos: 2 }), [1, 2]);
  assert.deepEqual(stopTokenIds(1, {}), [1]);
});
