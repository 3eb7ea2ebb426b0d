import assert from "node:assert/strict";
import { packParams, paramBytes, writeParams } from "./params.ts";

Deno.test("writeParams lays out u32, f32 and i32 fields and zero-pads to 16 bytes", () => {
  const view = new DataView(new ArrayBuffer(64));
  new Uint8Array(view.buffer).fill(0xab); // a used arena slot
  const p = packParams([7, { f32: 0.5 }, { i32: -3 }, 2 ** 32 - 1, 9]);
  assert.equal(writeParams(view, 16, p), 32);
  assert.equal(view.getUint32(16, true), 7);
  assert.equal(view.getFloat32(20, true), 0.5);
  assert.equal(view.getInt32(24, true), -3);
  assert.equal(view.getUint32(28, true), 2 ** 32 - 1);
  assert.equal(view.getUint32(32, true), 9);
  assert.deepEqual([36, 40, 44].map((at) => view.getUint32(at, true)), [0, 0, 0], "padding");
  assert.equal(view.getUint8(15), 0xab, "nothing before the offset");
  assert.equal(view.getUint8(48), 0xab, "nothing past the padding");
  assert.equal(writeParams(view, 0, packParams([])), 16, "an empty list still takes 16 bytes");
  assert.deepEqual(new Uint32Array(paramBytes(packParams([1, 2]))), Uint32Array.of(1, 2, 0, 0));
});
