import assert from "node:assert/strict";
import { charTokenizerTexts } from "../io/mod.ts";
import { resolveTokenizer } from "./setup.ts";

const GENERATION = '{\n  "eos_token_id": 1\n}\n';
const messages = [{ role: "user", content: "2+2" }];
const none = { tokenizerDir: null, customTemplate: null, templateVariables: {} };

Deno.test("tokenizer choice: the model folder's files, chat_template.jinja included", async () => {
  const files = {
    ...charTokenizerTexts(),
    "chat_template.jinja": "{{ messages[0].content }}?",
    "generation_config.json": GENERATION,
  };
  const r = await resolveTokenizer({ path: "model", files }, none);
  assert.equal(r.tokenizer.applyChatTemplate(messages), "2+2?");
  assert.deepEqual(r.files, files);
});

Deno.test("tokenizer choice: data.tokenizer replaces the tokenizer files; kwargs and custom template", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const texts = charTokenizerTexts();
    for (const [name, text] of Object.entries(texts)) {
      await Deno.writeTextFile(`${dir}/${name}`, text);
    }
    await Deno.writeTextFile(
      `${dir}/chat_template.jinja`,
      "{{ messages[0].content }}{% if enable_thinking %}!{% endif %}",
    );
    // The model folder's own template and tokenizer must not leak into the run or its saves.
    const model = {
      path: "model",
      files: { "chat_template.jinja": "model's", "generation_config.json": GENERATION },
    };
    const choice = { ...none, tokenizerDir: dir, templateVariables: { enable_thinking: true } };
    const r = await resolveTokenizer(model, choice);
    assert.equal(r.tokenizer.applyChatTemplate(messages), "2+2!");
    assert.equal(
      r.files["chat_template.jinja"],
      await Deno.readTextFile(`${dir}/chat_template.jinja`),
    );
    assert.equal(r.files["tokenizer.json"], texts["tokenizer.json"]);
    assert.equal(r.files["generation_config.json"], GENERATION);
    const custom = await resolveTokenizer(model, {
      ...choice,
      customTemplate: "<{{ messages[0].content }}>",
    });
    assert.equal(custom.tokenizer.applyChatTemplate(messages), "<2+2>");
    assert.equal(custom.files["chat_template.jinja"], "<{{ messages[0].content }}>");
    await assert.rejects(
      resolveTokenizer({ path: "model", files: {} }, none),
      /model: tokenizer\.json is missing/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
