import assert from "node:assert/strict";
import { fromFloat32, toFloat32 } from "./dtype.ts";
import { parseSafetensors, type RawTensor, serializeSafetensors } from "./safetensors.ts";
import { buildShardIndex, parseShardIndex, planShards, shardFileName } from "./shards.ts";

function f32Tensor(name: string, shape: number[], values: number[]): RawTensor {
  return { name, dtype: "F32", shape, bytes: fromFloat32(new Float32Array(values), "F32") };
}

/** A file with a hand-written header, for corruption cases the serialiser would never produce. */
function craftFile(header: unknown, dataBytes: number, headerLength?: number): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.byteLength + dataBytes);
  new DataView(out.buffer).setUint32(0, headerLength ?? json.byteLength, true);
  out.set(json, 8);
  return out;
}

Deno.test("serialise: layout, padding, sorted keys, contiguous offsets, metadata", () => {
  const tensors: RawTensor[] = [
    { name: "b.half", dtype: "F16", shape: [3], bytes: fromFloat32(new Float32Array(3), "F16") },
    f32Tensor("a.weight", [2, 2], [1, 2, 3, 4]),
    { name: "c.ids", dtype: "I64", shape: [1], bytes: new Uint8Array(8).fill(7) },
  ];
  const bytes = serializeSafetensors(tensors, { metadata: { format: "pt" } });
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assert.equal((8 + n) % 8, 0);
  const text = new TextDecoder().decode(bytes.subarray(8, 8 + n));
  assert.match(text, / *$/);
  const header = JSON.parse(text);
  assert.deepEqual(Object.keys(header), ["__metadata__", "a.weight", "b.half", "c.ids"]);
  assert.deepEqual(header.__metadata__, { format: "pt" });
  // Widest dtype first keeps every tensor aligned to its element size.
  assert.deepEqual(header["c.ids"].data_offsets, [0, 8]);
  assert.deepEqual(header["a.weight"].data_offsets, [8, 24]);
  assert.deepEqual(header["b.half"].data_offsets, [24, 30]);
  assert.equal(bytes.byteLength, 8 + n + 30);
  assert.deepEqual(serializeSafetensors(tensors, { metadata: { format: "pt" } }), bytes);

  const parsed = parseSafetensors(bytes);
  assert.deepEqual(parsed.metadata, { format: "pt" });
  const a = parsed.tensors.find((t) => t.name === "a.weight")!;
  assert.equal(a.bytes.buffer, bytes.buffer, "parsed tensors are views, not copies");
  assert.deepEqual(Array.from(toFloat32(a.bytes, "F32")), [1, 2, 3, 4]);
  assert.deepEqual(a.shape, [2, 2]);
});

Deno.test("serialise: rejects byte lengths that do not match the shape", () => {
  const bad = { ...f32Tensor("w", [2], [1, 2]), shape: [3] };
  assert.throws(() => serializeSafetensors([bad]), /tensor "w".*needs 12/);
});

Deno.test("parse: empty file list and zero-size tensors", () => {
  const bytes = serializeSafetensors([f32Tensor("empty", [0, 4], [])]);
  const { tensors } = parseSafetensors(bytes);
  assert.deepEqual(tensors[0].shape, [0, 4]);
  assert.equal(tensors[0].bytes.byteLength, 0);
  assert.deepEqual(parseSafetensors(serializeSafetensors([])).tensors, []);
});

Deno.test("parse: corrupt and truncated files name the file and the tensor", () => {
  const file = "shard.safetensors";
  const good = { w: { dtype: "F32", shape: [2], data_offsets: [0, 8] } };
  const cases: [string, Uint8Array, RegExp][] = [
    ["shorter than the length prefix", new Uint8Array(5), /shard\.safetensors: truncated/],
    [
      "header length past the end",
      craftFile(good, 8, 4096),
      /shard\.safetensors: header length 4096/,
    ],
    [
      "bad JSON",
      craftFile(good, 8).map((b, i) => (i === 9 ? 0x7b : b)),
      /shard\.safetensors: header is not valid JSON/,
    ],
    [
      "header not an object",
      craftFile([1, 2], 0),
      /shard\.safetensors: header is not a JSON object/,
    ],
    [
      "truncated data",
      craftFile(good, 8).subarray(0, 8 + JSON.stringify(good).length + 5),
      /shard\.safetensors: tensor "w": data_offsets \[0, 8\] exceed the data section \(5 bytes\)/,
    ],
    [
      "overlapping tensors",
      craftFile({ ...good, v: { dtype: "F32", shape: [1], data_offsets: [4, 8] } }, 8),
      /shard\.safetensors: tensor "v": .*overlap tensor "w"/,
    ],
    [
      "size not matching dtype and shape",
      craftFile({ w: { dtype: "F32", shape: [3], data_offsets: [0, 8] } }, 8),
      /shard\.safetensors: tensor "w": holds 8 bytes but F32 \[3\] needs 12/,
    ],
    [
      "unknown dtype",
      craftFile({ w: { dtype: "F17", shape: [2], data_offsets: [0, 8] } }, 8),
      /shard\.safetensors: tensor "w": unknown dtype "F17"/,
    ],
    [
      "negative shape",
      craftFile({ w: { dtype: "F32", shape: [-2], data_offsets: [0, 8] } }, 8),
      /tensor "w": bad shape/,
    ],
    [
      "reversed offsets",
      craftFile({ w: { dtype: "F32", shape: [0], data_offsets: [8, 0] } }, 8),
      /tensor "w": data_offsets \[8, 0\] are reversed/,
    ],
    [
      "metadata not strings",
      craftFile({ __metadata__: { format: 1 } }, 0),
      /shard\.safetensors: __metadata__\["format"\] is not a string/,
    ],
  ];
  for (const [what, bytes, pattern] of cases) {
    assert.throws(() => parseSafetensors(bytes, { file }), pattern, what);
  }
});

Deno.test("shards: planning, file names and the index", () => {
  const t = (name: string, n: number) => ({ name, dtype: "F32" as const, shape: [n] });
  const tensors = [t("a", 10), t("b", 10), t("c", 30), t("d", 1)];
  const shards = planShards(tensors, 80);
  assert.deepEqual(shards.map((s) => s.map((x) => x.name)), [["a", "b"], ["c"], ["d"]]);
  assert.equal(shardFileName(0, 3), "model-00001-of-00003.safetensors");
  const index = buildShardIndex(shards);
  assert.equal(index.metadata.total_size, 51 * 4);
  assert.deepEqual(index.weight_map, {
    a: "model-00001-of-00003.safetensors",
    b: "model-00001-of-00003.safetensors",
    c: "model-00002-of-00003.safetensors",
    d: "model-00003-of-00003.safetensors",
  });
  assert.deepEqual(parseShardIndex(JSON.stringify(index), "i.json"), index);
  assert.throws(() => parseShardIndex("{}", "i.json"), /i\.json: missing "weight_map"/);
  assert.throws(() => parseShardIndex("{", "i.json"), /i\.json: not valid JSON/);
  assert.throws(
    () => parseShardIndex({ weight_map: { a: "../x" } }, "i.json"),
    /weight_map\["a"\] is not a plain file name/,
  );
  assert.throws(() => planShards(tensors, 0), /maxShardBytes/);
});
