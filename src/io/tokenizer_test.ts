import assert from "node:assert/strict";
import { HfTokenizer } from "./tokenizer.ts";
import { qwenTokenizerFiles } from "./test_fixtures.ts";

const files = await qwenTokenizerFiles();
const qwen = new HfTokenizer(files.tokenizerJson, files.tokenizerConfig);

Deno.test("qwen: special token ids come from tokenizer_config.json", () => {
  assert.equal(qwen.eosTokenId, 151645);
  assert.equal(qwen.eosToken, "<|im_end|>");
  assert.equal(qwen.padTokenId, 151643);
  assert.equal(qwen.bosTokenId, null);
  assert.equal(qwen.tokenToId("<|endoftext|>"), 151643);
  assert.equal(qwen.tokenToId("<|im_start|>"), 151644);
  assert.equal(qwen.vocabSize, 151669);
});

Deno.test("qwen: known ids for known strings", () => {
  assert.deepEqual(qwen.encode("Hello world"), [9707, 1879]);
  assert.deepEqual(qwen.encode("<|im_start|>user\nhi<|im_end|>"), [151644, 872, 198, 6023, 151645]);
  assert.deepEqual(qwen.encode("Hello world", { addSpecialTokens: false }), [9707, 1879]);
});

Deno.test("qwen: encode/decode round-trips", () => {
  const texts = [
    "The quick brown fox jumps over the lazy dog.",
    "你好，世界！今天天气怎么样？",
    "emoji 🤗🚀 and a family 👨‍👩‍👧‍👦 and a flag 🇯🇵",
    "def f(x):\n    return x * 2  # two spaces\n\n\tindented\t\ttabs   trailing   \n",
    "Ünïcödé, ñ, ß, ﬁ and 12345.678 + 3e-5",
    "<|im_start|>assistant\nsure<|im_end|>",
  ];
  for (const text of texts) {
    const ids = qwen.encode(text);
    assert.ok(ids.every((id) => Number.isInteger(id) && id >= 0 && id < qwen.vocabSize));
    assert.equal(qwen.decode(ids), text);
    assert.equal(qwen.decode(Int32Array.from(ids)), text);
  }
});

Deno.test("qwen: decode skips special tokens on request and ignores padded-vocab ids", () => {
  const ids = [151644, 9707, 1879, 151645, 151643];
  assert.equal(qwen.decode(ids), "<|im_start|>Hello world<|im_end|><|endoftext|>");
  assert.equal(qwen.decode(ids, { skipSpecialTokens: true }), "Hello world");
  assert.equal(qwen.decode([9707, 151900]), "Hello");
  assert.equal(qwen.decode([]), "");
});

Deno.test("qwen: chat template renders ChatML", () => {
  const messages = [
    { role: "system", content: "You are a helpful assistant." },
    { role: "user", content: "What is 2+3?" },
  ];
  assert.equal(
    qwen.applyChatTemplate(messages, { addGenerationPrompt: true }),
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n" +
      "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n",
  );
  assert.equal(
    qwen.applyChatTemplate(messages),
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n" +
      "<|im_start|>user\nWhat is 2+3?<|im_end|>\n",
  );
  assert.equal(
    qwen.applyChatTemplate([messages[1]], {
      addGenerationPrompt: true,
      extra: { enable_thinking: false },
    }),
    "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
  );
});

Deno.test("tokenizer: AddedToken objects, pad fallback and errors", () => {
  const config = JSON.parse(files.tokenizerConfig);
  const objectTokens = new HfTokenizer(files.tokenizerJson, {
    ...config,
    eos_token: { content: "<|endoftext|>", lstrip: false, rstrip: false },
    pad_token: null,
  });
  assert.equal(objectTokens.eosTokenId, 151643);
  assert.equal(objectTokens.padTokenId, 151643);
  assert.throws(
    () => new HfTokenizer(files.tokenizerJson, { ...config, eos_token: "<nope>" }, { source: "m" }),
    /m\/tokenizer_config\.json: eos_token "<nope>" is not in the vocabulary/,
  );
  assert.throws(() => new HfTokenizer("{", config), /tokenizer\.json: not valid JSON/);
  const noTemplate = new HfTokenizer(files.tokenizerJson, { ...config, chat_template: undefined });
  assert.throws(() => noTemplate.applyChatTemplate([]), /no chat_template/);
});
