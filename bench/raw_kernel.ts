/**
 * What the probes that run their own WGSL beside the op layer share (register_tile_probe.ts,
 * nt_tile_probe.ts): random operands, a buffer read back, a GEMM's output and parameters, one
 * kernel's dispatch, the time of its back-to-back dispatches from timestamps written around them,
 * and the profiled time of the op layer's baseline.
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

/**
 * A dispatch of `code`'s `main` with `bindings` (binding number -> buffer) over `workgroups`, for
 * `timeRaw`. Throws what pipeline creation throws.
 */
export function rawDispatch(
  code: string,
  bindings: [number, GPUBuffer][],
  workgroups: [number, number],
): (pass: GPUComputePassEncoder) => void {
  const dev = gpu().device;
  const module = dev.createShaderModule({ code });
  const pipe = dev.createComputePipeline({
    layout: "auto",
    compute: { module, entryPoint: "main" },
  });
  const bind = dev.createBindGroup({
    layout: pipe.getBindGroupLayout(0),
    entries: bindings.map(([binding, buffer]) => ({ binding, resource: { buffer } })),
  });
  return (pass) => {
    pass.setPipeline(pipe);
    pass.setBindGroup(0, bind);
    pass.dispatchWorkgroups(...workgroups);
  };
}

/** The fastest of three `timeRaw` runs of `reps` dispatches each, after three to warm up. */
export async function bestRawMs(
  dispatch: (pass: GPUComputePassEncoder) => void,
  reps: number,
): Promise<number> {
  await timeRaw(dispatch, 3);
  const t: number[] = [];
  for (let rep = 0; rep < 3; rep++) t.push(await timeRaw(dispatch, reps));
  return Math.min(...t);
}

/** The fastest of three profiled runs of `reps` calls of `fn` (op-layer work), ms per call. */
export async function bestProfiledMs(fn: () => void, reps: number): Promise<number> {
  const times: number[] = [];
  for (let rep = 0; rep < 3; rep++) {
    const prof = await gpu().profile(() => {
      for (let r = 0; r < reps; r++) fn();
    });
    times.push(prof.reduce((s, p) => s + p.ms, 0) / reps);
  }
  return Math.min(...times);
}

/** An f32 [m, n] output and a uniform [m, n, k, 0] for a probe's GEMM. */
export function gemmBuffers(
  m: number,
  n: number,
  k: number,
): { out: GPUBuffer; params: GPUBuffer } {
  const dev = gpu().device;
  const out = dev.createBuffer({
    size: m * n * 4,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
  });
  const params = dev.createBuffer({
    size: 16,
    usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
  });
  dev.queue.writeBuffer(params, 0, new Uint32Array([m, n, k, 0]));
  return { out, params };
}
