import assert from "node:assert/strict";
import { charTokenizerTexts } from "./char_tokenizer.ts";
import { smallModelConfig } from "./test_fixtures.ts";
import { loadTokenizer, readModelFolder, writeModelFolder } from "./hf_folder.ts";
import { expectedTensorShapes, floatTensor } from "./hf_weights.ts";
import { elementCount } from "./safetensors.ts";
import { tokenizerFromFiles } from "./tokenizer.ts";

const config = smallModelConfig("llama");
const tensors = new Map(
  [...expectedTensorShapes(config)].map((
    [n, s],
  ) => [n, floatTensor(s, new Float32Array(elementCount(s)).fill(0.5))]),
);
// A generation config with keys our sampler does not read: it must travel verbatim.
const GENERATION = '{\n  "do_sample": true,\n  "eos_token_id": [1, 2],\n  "top_p": 0.8,\n' +
  '  "transformers_version": "5.0.0",\n  "watermarking_config": null\n}\n';
const TEMPLATE = "{% for m in messages %}<|user|>{{ m.content }}{% endfor %}" +
  "{% if enable_thinking %}T{% endif %}";

Deno.test("folder: generation_config.json and chat_template.jinja travel verbatim", async () => {
  const root = await Deno.makeTempDir();
  try {
    const files = {
      ...charTokenizerTexts(),
      "chat_template.jinja": TEMPLATE,
      "generation_config.json": GENERATION,
    };
    await writeModelFolder(`${root}/a`, { config, tensors, files });
    const a = await readModelFolder(`${root}/a`);
    assert.deepEqual(a.files, files);
    assert.deepEqual(Object.keys(a.tokenizerFiles).sort(), [
      "chat_template.jinja",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    assert.deepEqual(a.generationConfig, { doSample: true, eosTokenId: [1, 2], topP: 0.8 });
    // Saving what was read copies the files byte for byte, generation_config.json included.
    await writeModelFolder(`${root}/b`, {
      config: a.config,
      tensors: a.tensors,
      files: a.files,
      generationConfig: { doSample: false },
    });
    assert.equal(await Deno.readTextFile(`${root}/b/generation_config.json`), GENERATION);
    assert.equal(await Deno.readTextFile(`${root}/b/chat_template.jinja`), TEMPLATE);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("tokenizer: chat_template.jinja wins over the config's, a custom template over both", async () => {
  const root = await Deno.makeTempDir();
  try {
    for (const [name, text] of Object.entries(charTokenizerTexts())) {
      await Deno.writeTextFile(`${root}/${name}`, text);
    }
    const messages = [{ role: "user", content: "2+2" }];
    const fromConfig = await loadTokenizer(root);
    assert.equal(fromConfig.applyChatTemplate(messages), "<|user|>2+2<eos>");
    await Deno.writeTextFile(`${root}/chat_template.jinja`, TEMPLATE);
    const fromJinja = await loadTokenizer(root, { templateVariables: { enable_thinking: true } });
    assert.equal(fromJinja.applyChatTemplate(messages), "<|user|>2+2T");
    // A call's own variables win over the tokenizer's.
    assert.equal(
      fromJinja.applyChatTemplate(messages, { extra: { enable_thinking: false } }),
      "<|user|>2+2",
    );
    const custom = await loadTokenizer(root, { chatTemplate: "{{ messages[0].content }}!" });
    assert.equal(custom.applyChatTemplate(messages), "2+2!");
    await assert.rejects(loadTokenizer(`${root}/nope`), /tokenizer folder .*\/nope does not exist/);
    assert.throws(
      () => tokenizerFromFiles({ "tokenizer_config.json": "{}" }, { source: "tok" }),
      /tok: tokenizer\.json is missing/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
