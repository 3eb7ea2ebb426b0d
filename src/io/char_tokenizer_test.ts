import assert from "node:assert/strict";
import {
  byteLevelChar,
  CHAR_ALPHABET,
  CHAR_SPECIAL_TOKENS,
  charTokenizer,
  charTokenizerFiles,
  charTokenizerTexts,
} from "./char_tokenizer.ts";
import { loadTokenizer } from "./hf_folder.ts";

const ASSETS = new URL("../../assets/char_tokenizer/", import.meta.url);

Deno.test("char tokenizer: the committed assets match the generator", async () => {
  for (const [name, text] of Object.entries(charTokenizerTexts())) {
    assert.equal(
      await Deno.readTextFile(new URL(name, ASSETS)),
      text,
      `assets/char_tokenizer/${name} is stale: run deno run -A src/io/char_tokenizer.ts`,
    );
  }
});

Deno.test("char tokenizer: loads through the HF loader and round-trips", async () => {
  const tok = await loadTokenizer(ASSETS.pathname);
  assert.equal(tok.vocabSize, 64);
  assert.equal(CHAR_SPECIAL_TOKENS.length + [...CHAR_ALPHABET].length, 64);
  assert.equal(tok.padTokenId, 0);
  assert.equal(tok.eosTokenId, 1);
  assert.equal(tok.bosTokenId, null);
  const texts = ["12+7=19", "what is (3*4)-5?\n#### 7", "  a  b  ", "x/y = 0.5, ok!", ""];
  for (const text of texts) {
    const ids = tok.encode(text);
    assert.equal(ids.length, [...text].length, "one token per character");
    assert.equal(tok.decode(ids), text);
  }
  assert.deepEqual(tok.encode("0+"), [8, 18]);
  // Characters outside the alphabet are dropped, as transformers drops them when it loads these
  // files (Qwen2Tokenizer and TokenizersBackend alike: a BPE model without unk_token).
  assert.deepEqual(tok.encode("A9"), [17]);
  assert.deepEqual(tok.encode("\t#### 6"), [23, 23, 23, 23, 7, 14]);
  assert.deepEqual(tok.encode("é"), []);
});

Deno.test("char tokenizer: the vocabulary is spelled in GPT-2's byte alphabet", () => {
  // The reversible map byte-level BPE uses (transformers' bytes_to_unicode), spot checks.
  assert.equal(byteLevelChar(0x20), "\u0120"); // space -> "Ġ"
  assert.equal(byteLevelChar(0x0a), "\u010a"); // newline -> "Ċ"
  assert.equal(byteLevelChar(0x09), "\u0109"); // tab -> "ĉ"
  assert.equal(byteLevelChar(0x00), "\u0100");
  assert.equal(byteLevelChar(0x7f), "\u0121");
  assert.equal(byteLevelChar(0xad), "\u0143");
  for (const c of "AZaz09!~") assert.equal(byteLevelChar(c.charCodeAt(0)), c);
  const model = charTokenizerFiles().tokenizerJson.model as { vocab: Record<string, number> };
  assert.equal(model.vocab["\u0120"], 7);
  assert.equal(model.vocab["\u010a"], 6);
  assert.equal(model.vocab[" "], undefined);
  assert.throws(() => charTokenizer({ alphabet: "ab\u00e9" }), /"\u00e9" is not ASCII/);
});

Deno.test("char tokenizer: chat template and special tokens", () => {
  const tok = charTokenizer();
  const prompt = tok.applyChatTemplate(
    [{ role: "system", content: "add" }, { role: "user", content: "2+2=" }],
    { addGenerationPrompt: true },
  );
  assert.equal(prompt, "<|system|>add<eos><|user|>2+2=<eos><|assistant|>");
  const ids = tok.encode(prompt);
  assert.deepEqual(ids.slice(0, 1), [3]);
  assert.equal(ids.at(-1), 5);
  assert.equal(ids.filter((id) => id === tok.eosTokenId).length, 2);
  assert.equal(tok.decode(ids), prompt);
  assert.equal(tok.decode(ids, { skipSpecialTokens: true }), "add2+2=");
  assert.equal(
    tok.applyChatTemplate([{ role: "assistant", content: "4" }]),
    "<|assistant|>4<eos>",
  );
  assert.throws(
    () => tok.applyChatTemplate([{ role: "tool", content: "x" }]),
    /unknown role: tool/,
  );
});

Deno.test("char tokenizer: custom alphabets are checked", () => {
  assert.throws(() => charTokenizer({ alphabet: "aa" }), /repeated/);
  const small = charTokenizer({ alphabet: "01" });
  assert.equal(small.vocabSize, CHAR_SPECIAL_TOKENS.length + 2);
  assert.deepEqual(small.encode("10"), [7, 6]);
});
