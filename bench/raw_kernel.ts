/**
 * What the probes that run their own WGSL beside the op layer share (register_tile_probe.ts,
 * nt_tile_probe.ts): random operands, a buffer read back, and the time of one kernel's
 * back-to-back dispatches from timestamps written around them.
 */
import { gpu } from "../src/gpu/mod.ts";
import { rng } from "../src/testing/mod.ts";

/** n values uniform in [-1, 1) from `seed`. */
export function randomData(n: number, seed: number): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = r() * 2 - 1;
  return out;
}

/** The first `size` f32 values of `buf`. */
export async function readF32(buf: GPUBuffer, size: number): Promise<Float32Array> {
  const [bytes] = await gpu().read([{ buffer: buf, size: size * 4 }]);
  return new Float32Array(bytes);
}

let stamps: { set: GPUQuerySet; buffer: GPUBuffer } | null = null;

/**
 * Milliseconds per dispatch of `n` passes that `dispatch` fills (pipeline, bind group, workgroups),
 * recorded into one encoder after the work already recorded, from a timestamp before the first
 * and after the last.
 */
export async function timeRaw(
  dispatch: (pass: GPUComputePassEncoder) => void,
  n: number,
): Promise<number> {
  const g = gpu(), dev = g.device;
  stamps ??= {
    set: dev.createQuerySet({ type: "timestamp", count: 2 }),
    buffer: dev.createBuffer({
      size: 16,
      usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
    }),
  };
  const { set, buffer } = stamps;
  g.flush();
  const enc = dev.createCommandEncoder();
  for (let r = 0; r < n; r++) {
    const pass = enc.beginComputePass(
      r === 0
        ? { timestampWrites: { querySet: set, beginningOfPassWriteIndex: 0 } }
        : r === n - 1
        ? { timestampWrites: { querySet: set, endOfPassWriteIndex: 1 } }
        : {},
    );
    dispatch(pass);
    pass.end();
  }
  enc.resolveQuerySet(set, 0, 2, buffer, 0);
  dev.queue.submit([enc.finish()]);
  const [bytes] = await g.read([{ buffer, size: 16 }]);
  const t = new BigUint64Array(bytes);
  return Number(t[1] - t[0]) / 1e6 / n;
}
