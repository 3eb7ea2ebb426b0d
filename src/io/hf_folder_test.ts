import assert from "node:assert/strict";
import { convertFloatBytes } from "./dtype.ts";
import { makeModelConfig, type ModelConfig } from "./hf_config.ts";
import { loadTokenizer, readModelFolder, writeModelFolder } from "./hf_folder.ts";
import { expectedTensorShapes, floatTensor, type HfTensor, tensorToFloat32 } from "./hf_weights.ts";
import { elementCount } from "./safetensors.ts";
import { readSafetensorsFile, SafetensorsFile, writeSafetensorsFile } from "./safetensors_fs.ts";
import { charTokenizerFiles } from "./char_tokenizer.ts";

function tinyConfig(patch: Partial<ModelConfig> = {}): ModelConfig {
  return makeModelConfig({
    modelType: "qwen2",
    hiddenSize: 8,
    intermediateSize: 16,
    numHiddenLayers: 2,
    numAttentionHeads: 2,
    numKeyValueHeads: 1,
    vocabSize: 64,
    eosTokenId: 1,
    ...patch,
  });
}

/** Deterministic values with the awkward ones mixed in: NaN, infinities, subnormals, -0. */
function tinyTensors(config: ModelConfig): Map<string, HfTensor> {
  const special = [NaN, Infinity, -Infinity, 1e-40, -0, 65504, 3.4e38, 2 ** -24];
  let seed = 7;
  const out = new Map<string, HfTensor>();
  for (const [name, shape] of expectedTensorShapes(config)) {
    const values = new Float32Array(elementCount(shape));
    for (let i = 0; i < values.length; i++) {
      seed = (seed * 1664525 + 1013904223) >>> 0;
      values[i] = i < special.length ? special[i] : (seed / 2 ** 32 - 0.5) * 4;
    }
    out.set(name, floatTensor(shape, values));
  }
  return out;
}

async function listDir(path: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(path)) names.push(e.name);
  return names.sort();
}

const DTYPES = [["float32", "F32"], ["float16", "F16"], ["bfloat16", "BF16"]] as const;

for (const [torchDtype, dtype] of DTYPES) {
  for (const sharded of [false, true]) {
    Deno.test(`folder: ${torchDtype} ${sharded ? "sharded" : "single file"} re-loads bit-identically`, async () => {
      const root = await Deno.makeTempDir();
      try {
        const config = tinyConfig({ tieWordEmbeddings: false });
        const tensors = tinyTensors(config);
        const path = `${root}/model`;
        const tokenizer = charTokenizerFiles();
        await writeModelFolder(path, {
          config,
          tensors,
          dtype: torchDtype,
          tokenizerFiles: {
            "tokenizer.json": tokenizer.tokenizerJson,
            "tokenizer_config.json": tokenizer.tokenizerConfig,
          },
          generationConfig: { eosTokenId: 1, padTokenId: 0, temperature: 1.0 },
          maxShardBytes: sharded ? 1024 : undefined,
        });
        const files = await listDir(path);
        assert.equal(files.includes("model.safetensors"), !sharded);
        assert.equal(files.includes("model.safetensors.index.json"), sharded);
        if (sharded) {
          assert.ok(files.filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f)).length > 2);
        }
        assert.deepEqual(await listDir(root), ["model"], "no temporary folder left behind");

        const folder = await readModelFolder(path);
        assert.equal(folder.config.torchDtype, torchDtype);
        assert.deepEqual({ ...folder.config, torchDtype: "float32" }, config);
        assert.deepEqual(folder.generationConfig, {
          eosTokenId: 1,
          padTokenId: 0,
          temperature: 1.0,
        });
        assert.deepEqual(Object.keys(folder.tokenizerFiles).sort(), [
          "tokenizer.json",
          "tokenizer_config.json",
        ]);
        assert.equal(folder.tensors.size, tensors.size);
        for (const [name, t] of tensors) {
          const back = folder.tensors.get(name)!;
          assert.equal(back.dtype, dtype, name);
          assert.deepEqual(back.shape, t.shape, name);
          // Raw bytes, so NaN payloads and -0 count too.
          assert.deepEqual(back.data, convertFloatBytes(t.data, "F32", dtype), name);
        }
        // Writing what we read gives byte-identical files: the output is deterministic.
        const again = `${root}/again`;
        await writeModelFolder(again, { ...folder, maxShardBytes: sharded ? 1024 : undefined });
        for (const f of files) {
          assert.deepEqual(
            await Deno.readFile(`${again}/${f}`),
            await Deno.readFile(`${path}/${f}`),
            f,
          );
        }
        const tok = await loadTokenizer(path);
        assert.equal(tok.decode(tok.encode("12+7=19")), "12+7=19");
      } finally {
        await Deno.remove(root, { recursive: true });
      }
    });
  }
}

Deno.test("folder: tied embeddings drop lm_head; f32 values survive", async () => {
  const root = await Deno.makeTempDir();
  try {
    const config = tinyConfig({ tieWordEmbeddings: true });
    const tensors = tinyTensors(config);
    const embed = tensors.get("model.embed_tokens.weight")!;
    tensors.set("lm_head.weight", embed);
    await writeModelFolder(`${root}/m`, { config, tensors });
    const { tensors: back } = await readModelFolder(`${root}/m`);
    assert.equal(back.has("lm_head.weight"), false);
    assert.deepEqual(
      tensorToFloat32(back.get("model.embed_tokens.weight")!),
      tensorToFloat32(embed),
    );
    const config2 = JSON.parse(await Deno.readTextFile(`${root}/m/config.json`));
    assert.equal(config2.tie_word_embeddings, true);
    assert.deepEqual(config2.architectures, ["Qwen2ForCausalLM"]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("folder: errors name the folder, the file or the tensor", async () => {
  const root = await Deno.makeTempDir();
  try {
    const config = tinyConfig();
    const tensors = tinyTensors(config);
    await assert.rejects(readModelFolder(`${root}/nope`), /model folder .*\/nope does not exist/);
    await Deno.mkdir(`${root}/empty`);
    await assert.rejects(readModelFolder(`${root}/empty`), /missing .*\/empty\/config\.json/);

    const partial = new Map(tensors);
    partial.delete("model.layers.1.mlp.up_proj.weight");
    await assert.rejects(
      writeModelFolder(`${root}/x`, { config, tensors: partial }),
      /missing tensor "model\.layers\.1\.mlp\.up_proj\.weight"/,
    );
    assert.deepEqual(await listDir(root), ["empty"], "a refused write leaves nothing");

    await writeModelFolder(`${root}/m`, { config, tensors });
    await assert.rejects(writeModelFolder(`${root}/m`, { config, tensors }), /already exists/);
    await writeModelFolder(`${root}/m`, { config, tensors, overwrite: true, dtype: "float16" });
    assert.equal((await readModelFolder(`${root}/m`)).config.torchDtype, "float16");
    assert.deepEqual(await listDir(root), ["empty", "m"]);

    // Weights that lack a tensor the config needs.
    const { tensors: raw } = await readSafetensorsFile(`${root}/m/model.safetensors`);
    await writeSafetensorsFile(
      `${root}/m/model.safetensors`,
      raw.filter((t) => t.name !== "model.norm.weight"),
    );
    await assert.rejects(readModelFolder(`${root}/m`), /\/m: missing tensor "model\.norm\.weight"/);
    const wrongShape = raw.map((t) => t.name === "model.norm.weight" ? { ...t, shape: [2, 4] } : t);
    await writeSafetensorsFile(`${root}/m/model.safetensors`, wrongShape);
    await assert.rejects(
      readModelFolder(`${root}/m`),
      /tensor "model\.norm\.weight" has shape \[2,4\]/,
    );
    await Deno.remove(`${root}/m/model.safetensors`);
    await assert.rejects(
      readModelFolder(`${root}/m`),
      /missing weights: neither .*model\.safetensors/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("folder: a truncated or missing shard is reported with its path", async () => {
  const root = await Deno.makeTempDir();
  try {
    const config = tinyConfig();
    await writeModelFolder(`${root}/m`, {
      config,
      tensors: tinyTensors(config),
      maxShardBytes: 1024,
    });
    const index = JSON.parse(await Deno.readTextFile(`${root}/m/model.safetensors.index.json`));
    const shard = index.weight_map["model.norm.weight"];
    const path = `${root}/m/${shard}`;
    using file = await SafetensorsFile.open(path);
    const size = (await Deno.stat(path)).size;
    const last = [...file.entries.values()].at(-1)!;
    await Deno.truncate(path, size - 2);
    await assert.rejects(
      readModelFolder(`${root}/m`),
      new RegExp(
        `${shard}: tensor "${last.name.replaceAll(".", "\\.")}": data_offsets .* truncated`,
      ),
    );
    await Deno.remove(path);
    await assert.rejects(readModelFolder(`${root}/m`), new RegExp(`missing shard .*${shard}`));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
