import assert from "node:assert/strict";
import { smallModelConfig } from "./test_fixtures.ts";
import { adapterConfigJson, parseAdapterConfig } from "./peft.ts";

const config = smallModelConfig("qwen2");

const base = {
  peft_type: "LORA",
  r: 8,
  lora_alpha: 16,
  target_modules: ["q_proj", "v_proj"],
  task_type: "CAUSAL_LM",
};

Deno.test("adapter_config.json: lora_dropout is read, checked and written back", () => {
  const parse = (o: object) => parseAdapterConfig(JSON.stringify({ ...base, ...o }), "a.json");
  assert.equal(parse({}).dropout, 0, "PEFT's default");
  assert.equal(parse({ lora_dropout: 0.05 }).dropout, 0.05);
  assert.throws(() => parse({ lora_dropout: 1 }), /a\.json: lora_dropout=1 is not a probability/);
  assert.throws(() => parse({ lora_dropout: "0.1" }), /lora_dropout="0.1"/);
  const s = parse({ lora_dropout: 0.1 });
  const written = adapterConfigJson(config, s, ["model.layers.0.self_attn.q_proj"]);
  assert.equal((written as { lora_dropout: number }).lora_dropout, 0.1);
  assert.equal(parseAdapterConfig(JSON.stringify(written), "b.json").dropout, 0.1);
});
