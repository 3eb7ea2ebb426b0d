/**
 * An adapter's modules_to_save tensors (modules PEFT trains in full and saves beside the adapter):
 * loading applies them as PEFT's adapted model does (a saved lm_head or embedding of a tied model
 * unties the two, unless `ensure_weight_tying` kept them tied), saving writes them back, `deno task
 * merge` writes them into the merged folder, and training, which cannot update them, refuses the
 * folder. Names the model lacks and sizes that do not fit are refused, naming the file.
 */
import assert from "node:assert/strict";
import {
  readAdapterFolder,
  readModelFolder,
  readSafetensorsFile,
  savedModules,
  tensorToFloat32,
} from "../src/io/mod.ts";
import { loadModel, responseLogProbs, saveModel } from "../src/mod.ts";
import { mergeLoraRef, refLogits } from "../src/nn/mod.ts";
import { loraStart, mergeLoraFolder } from "../src/trainer/mod.ts";
import { gpuTest, randomArray } from "../src/testing/mod.ts";
import { BASE, writePeftFixture } from "./peft_fixture.ts";

const IDS = [5, 17, 33, 40, 2, 61, 70, 12, 9, 44];
const seqs = [{ prompt: IDS.slice(0, 3), response: IDS.slice(3) }];

async function baseSizes() {
  const cfg = (await readModelFolder(BASE, { tensors: false })).config;
  return { cfg, V: cfg.vocabSize, C: cfg.hiddenSize };
}

gpuTest("a saved lm_head unties a tied model: load, save, reload and merge match", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "webrl_peft_saved_" });
  try {
    const { cfg, V, C } = await baseSizes();
    assert.ok(cfg.tieWordEmbeddings, "the fixture ties its head to the embedding");
    const head = randomArray(V * C, 99, -0.5, 0.5);
    await writePeftFixture(`${tmp}/peft`, { modules_to_save: ["lm_head"] }, {
      "lm_head.weight": { shape: [V, C], data: head },
    });
    const adapted = await loadModel(BASE, { adapter: `${tmp}/peft` });
    assert.equal(adapted.config.tieWordEmbeddings, false);
    const got = (await responseLogProbs(adapted, seqs)).logProbs[0];

    // CPU reference: merged adapters, the saved head, the base's embedding.
    const base = await readModelFolder(BASE);
    const f32 = new Map([...base.tensors].map(([k, t]) => [k, tensorToFloat32(t)]));
    const adapter = await readAdapterFolder(`${tmp}/peft`, base.config);
    const merged = mergeLoraRef(base.config, f32, adapter.adapters, adapter.settings);
    merged.set("lm_head.weight", head);
    const untied = { ...base.config, tieWordEmbeddings: false };
    const logits = refLogits(untied, merged, {
      inputIds: Int32Array.from(IDS),
      batch: 1,
      seqLen: 10,
    });
    const want = IDS.slice(1).map((id, t) => {
      const row = logits.subarray(t * V, (t + 1) * V);
      const max = Math.max(...row);
      return row[id] - max - Math.log(row.reduce((a, v) => a + Math.exp(v - max), 0));
    });
    const err = Math.max(...got.map((x, i) => Math.abs(x - want[i + 2])));
    assert.ok(err < 2e-4, `log-probs with the saved head vs reference: ${err}`);
    const plainHead = (await responseLogProbs(await loadModel(BASE), seqs)).logProbs[0];
    assert.ok(plainHead.some((x, i) => Math.abs(x - got[i]) > 1e-3), "the head changed them");

    await saveModel(adapted, `${tmp}/saved`);
    const names = (await readSafetensorsFile(`${tmp}/saved/adapter_model.safetensors`)).tensors
      .map((t) => t.name);
    assert.ok(names.includes("base_model.model.lm_head.weight"), names.join());
    const again = await loadModel(BASE, { adapter: `${tmp}/saved` });
    assert.deepEqual((await responseLogProbs(again, seqs)).logProbs[0], got);

    await mergeLoraFolder(BASE, `${tmp}/saved`, `${tmp}/merged`);
    const cfgJson = JSON.parse(Deno.readTextFileSync(`${tmp}/merged/config.json`));
    assert.equal(cfgJson.tie_word_embeddings, false);
    const fromMerged = (await responseLogProbs(await loadModel(`${tmp}/merged`), seqs)).logProbs[0];
    fromMerged.forEach((x, i) => assert.ok(Math.abs(x - got[i]) < 1e-4, `merged ${i}`));
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("merge: a saved embedding unties (the head keeps the base's table); ensure_weight_tying keeps one", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "webrl_peft_embed_" });
  try {
    const { V, C } = await baseSizes();
    const table = randomArray(V * C, 7, -0.5, 0.5);
    const baseTensors = new Map(
      (await readSafetensorsFile(`${BASE}/model.safetensors`)).tensors.map((t) => [t.name, t]),
    );
    const embedBytes = baseTensors.get("model.embed_tokens.weight")!.bytes;
    const read = async (dir: string) =>
      new Map(
        (await readSafetensorsFile(`${dir}/model.safetensors`)).tensors.map((t) => [t.name, t]),
      );
    const f32 = (bytes: Uint8Array) => new Float32Array(bytes.slice().buffer);

    // PEFT's default: the embedding's copy is trained, lm_head keeps the original table.
    await writePeftFixture(`${tmp}/embed`, { modules_to_save: ["embed_tokens"] }, {
      "model.embed_tokens.weight": { shape: [V, C], data: table },
    });
    await mergeLoraFolder(BASE, `${tmp}/embed`, `${tmp}/m1`);
    const m1 = await read(`${tmp}/m1`);
    assert.deepEqual(f32(m1.get("model.embed_tokens.weight")!.bytes), table);
    assert.deepEqual(m1.get("lm_head.weight")!.bytes, embedBytes);
    assert.equal(
      JSON.parse(Deno.readTextFileSync(`${tmp}/m1/config.json`)).tie_word_embeddings,
      false,
    );

    // ensure_weight_tying: the saved head is the one table of both.
    await writePeftFixture(`${tmp}/tied`, {
      modules_to_save: ["lm_head"],
      ensure_weight_tying: true,
    }, { "lm_head.weight": { shape: [V, C], data: table } });
    await mergeLoraFolder(BASE, `${tmp}/tied`, `${tmp}/m2`);
    const m2 = await read(`${tmp}/m2`);
    assert.deepEqual(f32(m2.get("model.embed_tokens.weight")!.bytes), table);
    assert.equal(m2.has("lm_head.weight"), false);
    assert.equal(
      JSON.parse(Deno.readTextFileSync(`${tmp}/m2/config.json`)).tie_word_embeddings,
      true,
    );
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("saved tensors the model lacks or that do not fit are refused; training refuses any but a critic's score", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "webrl_peft_saved_bad_" });
  try {
    const { cfg, V, C } = await baseSizes();
    assert.throws(
      () => savedModules(cfg, new Map([["model.nope.weight", new Float32Array(4)]]), "ad"),
      /ad: modules_to_save tensor base_model\.model\.model\.nope\.weight is no tensor/,
    );
    assert.throws(
      () => savedModules(cfg, new Map([["lm_head.weight", new Float32Array(3)]]), "ad"),
      new RegExp(`lm_head\\.weight has 3 values, expected ${V * C}`),
    );
    await writePeftFixture(`${tmp}/ad`, { modules_to_save: ["lm_head"] }, {
      "lm_head.weight": { shape: [V, C], data: new Float32Array(V * C) },
    });
    const adapter = await readAdapterFolder(`${tmp}/ad`, cfg);
    // The embedding saved whole without modules_to_save (peft's save_embedding_layers).
    await writePeftFixture(`${tmp}/resized`, {}, {
      "model.embed_tokens.weight": { shape: [V, C], data: new Float32Array(V * C) },
    });
    await assert.rejects(
      () => readAdapterFolder(`${tmp}/resized`, cfg),
      /embed_tokens\.weight is a whole embedding or head outside modules_to_save.*resized/,
    );
    const keys = {
      lora_rank: 0,
      lora_alpha: 16,
      target_modules: "all-linear",
      exclude_modules: null,
      lora_adapter_path: `${tmp}/ad`,
    };
    assert.throws(
      () => loraStart(keys, { config: cfg, section: "actor_rollout_ref.model", adapter }),
      /actor_rollout_ref\.model\.lora_adapter_path=.*modules_to_save holds lm_head\.weight.*deno task merge/,
    );
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

gpuTest(
  "loadModel refuses a critic's adapter (task_type TOKEN_CLS), naming the folder",
  async () => {
    const tmp = Deno.makeTempDirSync({ prefix: "webrl_peft_critic_" });
    try {
      await writePeftFixture(`${tmp}/critic`, { task_type: "TOKEN_CLS" });
      await assert.rejects(
        () => loadModel(BASE, { adapter: `${tmp}/critic` }),
        /critic: task_type TOKEN_CLS is a critic's adapter; loadModel loads causal LMs/,
      );
    } finally {
      Deno.removeSync(tmp, { recursive: true });
    }
  },
);
