import assert from "node:assert/strict";
import { gpuTest } from "../testing/mod.ts";
import { gpu } from "./device.ts";

function u32Buffer(values: number[]): GPUBuffer {
  const g = gpu();
  const buffer = g.device.createBuffer({
    size: 4 * values.length,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
  });
  g.upload(buffer, Uint32Array.from(values));
  return buffer;
}

gpuTest("readWhile: reads the data as it was, runs work until the read is back", async () => {
  const g = gpu();
  const buffer = u32Buffer([1, 2, 3, 4]);
  let calls = 0;
  const [data] = await g.readWhile([{ buffer, size: 16 }], () => {
    calls++;
    g.upload(buffer, Uint32Array.from([9, 9, 9, 9])); // after the read's copy in queue order
    g.flush();
    return calls < 3;
  });
  assert.deepEqual([...new Uint32Array(data)], [1, 2, 3, 4]);
  assert.ok(calls >= 1 && calls <= 3, `work ran ${calls} times`);
  const [after] = await g.read([{ buffer, size: 16 }]);
  assert.deepEqual([...new Uint32Array(after)], [9, 9, 9, 9]);
  buffer.destroy();
});

gpuTest(
  "readWhile: work that returns false at once runs once; an error in it is thrown",
  async () => {
    const g = gpu();
    const buffer = u32Buffer([5, 6]);
    let calls = 0;
    const [data] = await g.readWhile([{ buffer, offset: 4, size: 4 }], () => {
      calls++;
      return false;
    });
    assert.deepEqual([...new Uint32Array(data)], [6]);
    assert.equal(calls, 1);
    await assert.rejects(
      g.readWhile([{ buffer, size: 8 }], () => {
        throw new Error("work failed");
      }),
      /work failed/,
    );
    buffer.destroy();
  },
);
