import assert from "node:assert/strict";
import { fromFloat32, toFloat32 } from "./dtype.ts";
import { parseSafetensors, type RawTensor, serializeSafetensors } from "./safetensors.ts";
import {
  readSafetensorsFile,
  readSafetensorsFolder,
  SafetensorsFile,
  writeSafetensorsFile,
  writeSafetensorsFolder,
} from "./safetensors_fs.ts";

function tensor(name: string, n: number, start: number): RawTensor {
  const values = Float32Array.from({ length: n }, (_, i) => start + i);
  return { name, dtype: "F32", shape: [n], bytes: fromFloat32(values, "F32") };
}

const TENSORS = [tensor("a", 3, 0), tensor("b", 5, 10), tensor("c", 2, 100)];

Deno.test("file: streamed writes equal the in-memory serialiser; reads go tensor by tensor", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/x.safetensors`;
    await writeSafetensorsFile(path, TENSORS, { metadata: { format: "pt" } });
    assert.deepEqual(
      await Deno.readFile(path),
      serializeSafetensors(TENSORS, { metadata: { format: "pt" } }),
    );
    using file = await SafetensorsFile.open(path);
    assert.deepEqual(file.metadata, { format: "pt" });
    assert.deepEqual([...file.entries.keys()].sort(), ["a", "b", "c"]);
    const b = await file.read("b");
    assert.deepEqual(Array.from(toFloat32(b.bytes, "F32")), [10, 11, 12, 13, 14]);
    assert.equal(b.bytes.byteLength, 20, "only the tensor's bytes are read");
    await assert.rejects(file.read("zz"), /x\.safetensors: tensor "zz": not in this file/);
    const all = await readSafetensorsFile(path);
    assert.deepEqual(
      all.tensors.map((t) => t.name).sort(),
      parseSafetensors(await Deno.readFile(path)).tensors.map((t) => t.name).sort(),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("file: corrupt files on disk are reported with their path", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/bad.safetensors`;
    await Deno.writeFile(path, new Uint8Array([1, 2, 3]));
    await assert.rejects(SafetensorsFile.open(path), /bad\.safetensors: truncated/);
    const good = serializeSafetensors(TENSORS);
    await Deno.writeFile(path, good.map((b, i) => (i === 8 ? 0x5d : b)));
    await assert.rejects(SafetensorsFile.open(path), /bad\.safetensors: header is not valid JSON/);
    await Deno.writeFile(path, good.subarray(0, good.byteLength - 4));
    await assert.rejects(
      readSafetensorsFile(path),
      /bad\.safetensors: tensor "c": data_offsets \[32, 40\] exceed the data section/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("folder of shards: index written, selective reads", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const files = await writeSafetensorsFolder(dir, TENSORS, { maxShardBytes: 20 });
    assert.deepEqual(files, [
      "model-00001-of-00003.safetensors",
      "model-00002-of-00003.safetensors",
      "model-00003-of-00003.safetensors",
      "model.safetensors.index.json",
    ]);
    const index = JSON.parse(await Deno.readTextFile(`${dir}/model.safetensors.index.json`));
    assert.equal(index.metadata.total_size, 40);
    const some = await readSafetensorsFolder(dir, { names: ["c", "a"] });
    assert.deepEqual([...some.keys()].sort(), ["a", "c"]);
    assert.deepEqual(Array.from(toFloat32(some.get("c")!.bytes, "F32")), [100, 101]);
    // An index that names a tensor its shard lacks.
    index.weight_map.d = "model-00001-of-00003.safetensors";
    await Deno.writeTextFile(`${dir}/model.safetensors.index.json`, JSON.stringify(index));
    await assert.rejects(
      readSafetensorsFolder(dir),
      /model-00001-of-00003\.safetensors: tensor "d": listed in model\.safetensors\.index\.json/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
