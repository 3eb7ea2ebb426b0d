import assert from "node:assert/strict";
import { gpuTest } from "../testing/mod.ts";
import { gpu } from "./device.ts";
import { packParams } from "./params.ts";

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

gpuTest("uploads behind pending commands land in order, across arena refills", async () => {
  const g = gpu();
  const x = u32Buffer([0, 0, 0, 0]), y = u32Buffer([0, 0, 0, 0]);
  const w = u32Buffer([0]), v = u32Buffer([0]);
  // A pending command: later uploads must wait for what precedes them.
  const pending = () => g.copy(w, 0, v, 0, 4);
  pending();
  g.upload(x, Uint32Array.from([1, 2, 3, 4]));
  g.copy(x, 0, y, 0, 16); // reads the first upload
  g.upload(x, Uint32Array.from([9, 8, 7, 6]));
  const [xs, ys] = await g.read([{ buffer: x, size: 16 }, { buffer: y, size: 16 }]);
  assert.deepEqual([...new Uint32Array(ys)], [1, 2, 3, 4]);
  assert.deepEqual([...new Uint32Array(xs)], [9, 8, 7, 6]);
  // Five quarter-MiB uploads, each after a pending command: more than one arena's worth.
  const words = 1 << 16;
  const targets = Array.from({ length: 5 }, () => u32Buffer(new Array(words).fill(0)));
  targets.forEach((t, k) => {
    pending();
    g.upload(t, new Uint32Array(words).fill(k + 1));
  });
  const back = await g.read(targets.map((t) => ({ buffer: t, size: 4 * words })));
  back.forEach((b, k) => {
    const v = new Uint32Array(b);
    assert.ok(v.every((e) => e === k + 1), `upload ${k}: ${v[0]} .. ${v[words - 1]}`);
  });
  // A length that is not a multiple of 4 bytes: the rest of the last word reads as zeros.
  const z = u32Buffer([0xffffffff, 0xffffffff]);
  pending();
  g.upload(z, Uint8Array.from([1, 2, 3, 4, 5, 6]));
  const [zs] = await g.read([{ buffer: z, size: 8 }]);
  assert.deepEqual([...new Uint8Array(zs)], [1, 2, 3, 4, 5, 6, 0, 0]);
  for (const b of [x, y, z, w, v, ...targets]) b.destroy();
});

gpuTest("pipelines: defines in any order share one pipeline, other values do not", () => {
  const g = gpu();
  const a = g.pipeline({ shader: "grad_norm", entry: "sumsq", defines: { WG: 64, PER_THREAD: 4 } });
  const b = g.pipeline({ shader: "grad_norm", entry: "sumsq", defines: { PER_THREAD: 4, WG: 64 } });
  const c = g.pipeline({ shader: "grad_norm", entry: "sumsq", defines: { WG: 64, PER_THREAD: 8 } });
  assert.equal(a, b);
  assert.notEqual(a, c);
  assert.equal(
    g.pipeline({ shader: "grad_norm", entry: "sumsq", defines: { WG: 64, PER_THREAD: 4 } }),
    a,
  );
});

gpuTest("bind groups: a full cache drops the least recently used, not the groups in use", () => {
  const g = gpu();
  const cap = g.recorder.bindGroupCap;
  g.recorder.bindGroupCap = 3;
  const buffers = Array.from({ length: 5 }, () => u32Buffer([0, 0, 0, 0]));
  const fill = (b: GPUBuffer) =>
    g.dispatch({ shader: "basic", entry: "fill", defines: { WG: 64 } }, {
      params: packParams([4, { f32: 1 }]),
      buffers: [b],
      workgroups: [1],
    });
  const made = (b: GPUBuffer) => {
    const before = g.recorder.bindGroups;
    fill(b);
    g.flush(); // every dispatch's uniforms at the arena's first slot: keys differ by buffer only
    return g.recorder.bindGroups - before;
  };
  try {
    const [b0, b1, b2, b3] = buffers;
    assert.deepEqual([b0, b1, b2].map(made), [1, 1, 1]);
    assert.equal(made(b0), 0); // a hit: b0 is now the most recently used
    assert.equal(made(b3), 1); // full: b1, the least recently used, goes
    assert.equal(made(b0), 0);
    assert.equal(made(b2), 0);
    assert.equal(made(b1), 1);
  } finally {
    g.recorder.bindGroupCap = cap;
    for (const b of buffers) b.destroy();
  }
});

gpuTest(
  "after a read the next dispatches go out in growing submits, none inside a timed span",
  async () => {
    const g = gpu();
    const buffer = u32Buffer([0, 0, 0, 0]);
    const fill = (n: number) => {
      for (let i = 0; i < n; i++) {
        g.dispatch({ shader: "basic", entry: "fill", defines: { WG: 64 } }, {
          params: packParams([4, { f32: i }]),
          buffers: [buffer],
          workgroups: [1],
        });
      }
    };
    const submitsOf = (n: number) => {
      const before = g.recorder.submits;
      fill(n);
      return g.recorder.submits - before;
    };
    const early = g.recorder.earlySubmits;
    g.recorder.earlySubmits = true; // off on CPU adapters: recording and running share the cores
    await g.read([{ buffer, size: 16 }]); // the queue is empty now
    // submitted at 32, then 64 and 128 more: three submits in 224 dispatches
    assert.equal(submitsOf(224), 3);
    g.flush();
    const [filled] = await g.read([{ buffer, size: 16 }]);
    assert.deepEqual([...new Float32Array(filled)], [223, 223, 223, 223]);
    // a timestamp (a GpuTimer span) stops early submits until the next read
    if (g.hasTimestamps) {
      const set = g.device.createQuerySet({ type: "timestamp", count: 2 });
      g.recorder.timestamp(set, 0);
      assert.equal(submitsOf(100), 0);
      g.flush();
      set.destroy();
    }
    g.recorder.earlySubmits = false;
    await g.read([{ buffer, size: 16 }]);
    assert.equal(submitsOf(224), 0, "none when early submits are off");
    g.flush();
    g.recorder.earlySubmits = early;
    buffer.destroy();
  },
);
