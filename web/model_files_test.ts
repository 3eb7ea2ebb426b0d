// Model folders in the trainer worker: the size estimate and the refusal with its numbers, a
// picked folder read back, and the download's files in the dtype the folder came in.
import assert from "node:assert/strict";
import {
  charTokenizerTexts,
  parseModelConfig,
  parseSafetensors,
  serializeModelConfig,
  tensorToFloat32,
} from "../src/io/mod.ts";
import { tinyModelConfig, tinyWeights } from "../src/nn/mod.ts";
import { folderFiles, modelInfo, readPickedFolder, sizeProblem } from "./model_files.ts";

const config = tinyModelConfig();
const weights = tinyWeights(config, { seed: 2 });
const roomy = {
  maxBufferSize: 2 ** 30,
  maxStorageBufferBindingSize: 2 ** 30,
  memoryBytes: 2 ** 33,
};

Deno.test("modelInfo counts the parameters the weights hold and names the largest tensor", () => {
  const info = modelInfo(config, "tiny");
  let n = 0, largest = ["", 0] as [string, number];
  for (const [name, w] of weights) {
    n += w.length;
    if (w.length > largest[1]) largest = [name, w.length];
  }
  assert.equal(info.parameters, n);
  assert.deepEqual(info.largestTensor, { name: largest[0], bytes: largest[1] * 4 });
  assert.equal(info.trainingBytes, n * 16);
  assert.equal(sizeProblem(info, roomy), null);
});

Deno.test("a model past the adapter's limits is refused with the numbers", () => {
  const big = modelInfo({ ...config, vocabSize: 152064, hiddenSize: 8192 }, "big");
  const binding = sizeProblem(big, { ...roomy, maxStorageBufferBindingSize: 2 ** 27 });
  assert.match(binding!, /"model\.embed_tokens\.weight" needs 4752 MiB as f32/);
  assert.match(binding!, /maxStorageBufferBindingSize \(128 MiB\)/);
  const info = modelInfo(config, "tiny");
  const memory = sizeProblem(info, { ...roomy, memoryBytes: info.trainingBytes - 1 });
  assert.match(memory!, /0\.1M parameters need about 1\.\d+ MiB to train/);
});

Deno.test("a picked folder reads back, and its download keeps bf16", async () => {
  const enc = new TextEncoder();
  const source = {
    source: "m",
    config: { ...config, torchDtype: "bfloat16" },
    tensors: weights,
    tokenizerFiles: { ...charTokenizerTexts() },
    generationConfig: null,
  };
  const files = folderFiles(source);
  const st = parseSafetensors(files["model.safetensors"]);
  assert.ok(st.tensors.every((t) => t.dtype === "BF16"));
  assert.equal(
    parseModelConfig(new TextDecoder().decode(files["config.json"])).torchDtype,
    "bfloat16",
  );
  const picked = Object.entries(files).map(([name, bytes]) => ({
    path: `my_model/${name}`,
    file: new File([bytes as Uint8Array<ArrayBuffer>], name),
  }));
  // Files of a subfolder are not the model's.
  picked.push({ path: "my_model/onnx/config.json", file: new File([enc.encode("{}")], "x") });
  const back = await readPickedFolder(picked, roomy);
  assert.equal(back.source, "my_model");
  for (const t of st.tensors) {
    const want = tensorToFloat32({ dtype: t.dtype, shape: t.shape, data: t.bytes });
    assert.deepEqual(back.tensors.get(t.name), want, t.name);
  }
  await assert.rejects(
    readPickedFolder(picked.filter((f) => !f.path.endsWith("tokenizer.json")), roomy),
    /my_model: no tokenizer\.json/,
  );
  const cfg = enc.encode(serializeModelConfig({ ...config, vocabSize: 152064, hiddenSize: 8192 }));
  await assert.rejects(
    readPickedFolder([{ path: "huge/config.json", file: new File([cfg], "config.json") }], {
      ...roomy,
      maxStorageBufferBindingSize: 2 ** 27,
    }),
    /huge: tensor "model\.embed_tokens\.weight" needs/,
  );
});
