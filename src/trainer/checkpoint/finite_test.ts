import assert from "node:assert/strict";
import { floatTensor, writeModelFolder } from "../../io/mod.ts";
import { tinyModelConfig, tinyWeights, weightShapes } from "../../nn/mod.ts";
import { readWeights } from "../setup.ts";
import type { TrainableModel } from "../actor.ts";
import { firstNonFinite } from "./finite.ts";
import { writeModel } from "./store.ts";

Deno.test("firstNonFinite finds the first NaN or ±Infinity in order", () => {
  const ok = new Float32Array([1, -2, 3e38]);
  assert.equal(firstNonFinite([["a", ok]]), null);
  assert.deepEqual(firstNonFinite([["a", ok], ["b", new Float32Array([0, -Infinity, NaN])]]), {
    tensor: "b",
    index: 1,
    value: -Infinity,
  });
});

async function modelFolder(dir: string, poison: string, maxShardBytes?: number) {
  const config = tinyModelConfig({ vocabSize: 40, eosTokenId: 1 });
  const shapes = weightShapes(config);
  const arrays = tinyWeights(config, { seed: 1 });
  arrays.get(poison)![7] = NaN;
  const tensors = new Map([...arrays].map(([k, v]) => [k, floatTensor(shapes.get(k)!, v)]));
  await writeModelFolder(dir, { config, tensors, maxShardBytes });
  return { config, arrays, shapes };
}

Deno.test("a model folder with non-finite weights is refused, naming file and tensor", async () => {
  const dir = Deno.makeTempDirSync();
  const name = "model.layers.0.mlp.up_proj.weight";
  await modelFolder(`${dir}/single`, name);
  await assert.rejects(
    readWeights(`${dir}/single`),
    new RegExp(
      `${dir}/single/model\\.safetensors: tensor ${
        name.replace(/\./g, "\\.")
      } holds NaN at element 7`,
    ),
  );
  await modelFolder(`${dir}/sharded`, name, 20_000);
  await assert.rejects(
    readWeights(`${dir}/sharded`),
    new RegExp(
      `${dir}/sharded/model-\\d{5}-of-\\d{5}\\.safetensors: tensor ${
        name.replace(/\./g, "\\.")
      } holds NaN`,
    ),
  );
  Deno.removeSync(dir, { recursive: true });
});

Deno.test("writeModel refuses non-finite parameters before writing anything", async () => {
  const dir = Deno.makeTempDirSync();
  const config = tinyModelConfig({ vocabSize: 40, eosTokenId: 1 });
  const arrays = tinyWeights(config, { seed: 1 });
  arrays.get("model.norm.weight")![2] = Infinity;
  const shapes = weightShapes(config);
  const model = {
    params: () => new Map([...shapes].map(([k, shape]) => [k, { shape }])),
    toArrays: () => Promise.resolve(arrays),
  } as unknown as TrainableModel;
  await assert.rejects(
    writeModel(`${dir}/actor`, { config, model }),
    /actor weights: tensor model\.norm\.weight holds Infinity at element 2; refusing to save/,
  );
  assert.deepEqual([...Deno.readDirSync(dir)], []);
  Deno.removeSync(dir, { recursive: true });
});
