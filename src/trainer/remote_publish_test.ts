import assert from "node:assert/strict";
import { gpu } from "../gpu/mod.ts";
import { Tensor } from "../tensor/mod.ts";
import { gpuTest } from "../testing/mod.ts";
import { WeightReadback } from "./remote_publish.ts";

const values = (n: number, k: number) =>
  Float32Array.from({ length: n }, (_, i) => Math.sin(i + k));

gpuTest(
  "weights readback: each version's values, buffers reused; f16 cast where the GPU has it",
  async () => {
    // An odd length: copies move whole 4-byte words, the next tensor starts aligned.
    const a = Tensor.from(values(7, 0), [7]).keep(), b = Tensor.from(values(64, 1), [8, 8]).keep();
    const params = new Map([["a", a], ["b", b]]);
    for (const castOnGpu of gpu().hasF16 ? [false, true] : [false]) {
      const rb = new WeightReadback(castOnGpu);
      const first = await rb.read(params);
      const want = (x: Float32Array) => castOnGpu ? Array.from(x, Math.f16round) : [...x];
      const got = (t: Float32Array | Uint16Array | undefined) =>
        t instanceof Uint16Array
          ? [...new Float16Array(t.buffer, t.byteOffset, t.length)]
          : [...t!];
      assert.deepEqual(got(first.tensors.get("a")), want(values(7, 0)));
      assert.deepEqual(got(first.tensors.get("b")), want(values(64, 1)));
      assert.equal(first.tensors.get("a") instanceof Uint16Array, castOnGpu);
      // The publisher hands the host buffer back; the next version reuses it and the staging.
      const host = first.tensors.get("a")!.buffer as ArrayBuffer;
      rb.recycle([host]);
      gpu().upload(a.buffer, values(7, 5));
      const second = await rb.read(params);
      assert.equal(second.tensors.get("a")!.buffer, host, "the host buffer is reused");
      assert.deepEqual(got(second.tensors.get("a")), want(values(7, 5)));
      assert.ok(second.seconds >= 0);
      gpu().upload(a.buffer, values(7, 0));
      rb.dispose();
    }
    a.dispose();
    b.dispose();
  },
);
