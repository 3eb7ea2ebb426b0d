/**
 * Keeps the Deno side of the transformers round trip runnable: it writes every folder, its
 * expected.json holds ids and log-probs that agree with our tokenizer and CPU reference, and the
 * folders carry what transformers needs (config, weights, tokenizer, generation config).
 */
import assert from "node:assert/strict";
import { charTokenizer, readModelFolder, readSafetensorsFile } from "../src/io/mod.ts";
import { TINY_FAMILIES } from "../src/nn/mod.ts";
import { PARITY_STRINGS, writeParityFolders } from "./transformers_parity.ts";

Deno.test({
  name: "transformers parity: the Deno side writes every folder and its expectations",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const expected = await writeParityFolders(dir);
      const tok = charTokenizer();
      assert.deepEqual(expected.strings.map((s) => s.text), PARITY_STRINGS);
      assert.deepEqual(expected.strings[0].ids, tok.encode("#### 6", { addSpecialTokens: false }));
      assert.equal(expected.models.length, Object.keys(TINY_FAMILIES).length + 1);
      for (const m of expected.models) {
        const folder = await readModelFolder(`${dir}/${m.folder}`);
        assert.equal(folder.config.architectures[0], m.architecture);
        for (const f of ["tokenizer.json", "tokenizer_config.json", "generation_config.json"]) {
          assert.ok(f in folder.files, `${m.folder}: ${f}`);
        }
        for (const s of m.sequences) {
          assert.equal(s.logprobs.length, s.ids.length - 1);
          assert.equal(s.greedy.length, 8);
          assert.ok(s.refMaxAbsErr < 1e-4, `${m.name}: GPU vs CPU reference ${s.refMaxAbsErr}`);
          assert.ok(s.logprobs.every((v) => Number.isFinite(v) && v <= 0), m.name);
        }
      }
      const bf16 = expected.models.find((m) => m.name.includes("bf16"))!;
      const { tensors } = await readSafetensorsFile(`${dir}/${bf16.folder}/model.safetensors`);
      assert.ok(tensors.every((t) => t.dtype === "BF16"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
