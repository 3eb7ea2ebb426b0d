/**
 * Fused vs unfused log-prob timings on a real GPU at Qwen's vocabulary (V 151936), N 512 and
 * N 4096 rows, printed as JSON lines. N 4096 logits (2.5 GB) exceed one storage binding, so they
 * run as four 1024-row tensors. Two clocks: wall time per call through the ops (the difference of
 * two batch sizes between syncs, so Deno's ~11 ms sync cost cancels) and, where the adapter has
 * `timestamp-query`, GPU time of the raw kernels in one timed compute pass.
 *
 *   deno run -A bench/logprob_device.ts [--quick]
 */
import { type Binding, initGpu, packParams, paramBytes, type Params } from "../src/gpu/mod.ts";
import type { KernelSpec } from "../src/gpu/mod.ts";
import { backward, scope, Tensor, zeroGrad } from "../src/tensor/mod.ts";
import { logprobEntropyRef } from "../src/tensor/mod.ts";
import { grid1d } from "../src/tensor/mod.ts";
import { logprobEntropy, logprobKernel } from "../src/tensor/mod.ts";
import { unfusedKernel, unfusedLogProbs } from "../src/tensor/mod.ts";

const g = await initGpu();
const quick = Deno.args.includes("--quick");
const V = quick ? 4099 : 151936;
const CHUNK = 1024;
const emit = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
emit({ adapter: g.adapterName, timestamps: g.hasTimestamps, f16: g.hasF16 });

function randomLogits(rows: number, seed: number): Float32Array {
  const xs = new Float32Array(rows * V);
  let s = seed >>> 0;
  for (let i = 0; i < xs.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    xs[i] = (s / 4294967296) * 16 - 8;
  }
  return xs;
}

/** Seconds per call of fn (which records GPU work), from two batch sizes between syncs. */
async function wallPerCall(fn: () => void, k1 = 2, k2 = 12): Promise<number> {
  const batch = async (k: number) => {
    const t0 = performance.now();
    for (let i = 0; i < k; i++) scope(fn);
    await g.sync();
    return performance.now() - t0;
  };
  await batch(2); // pipelines, bind groups, pool
  const a = await batch(k1), b = await batch(k2);
  return (b - a) / (k2 - k1) / 1000;
}

interface Launch {
  spec: KernelSpec;
  params: Params;
  buffers: Binding[];
  workgroups: [number, number?];
}

/** GPU seconds per repetition of `launches`, from timestamps around one compute pass. */
async function gpuPerRep(launches: Launch[], reps = 10): Promise<number> {
  await g.sync();
  const dev = g.device;
  const qs = dev.createQuerySet({ type: "timestamp", count: 2 });
  const resolve = dev.createBuffer({
    size: 16,
    usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
  });
  const read = dev.createBuffer({
    size: 16,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  const groups = launches.map((l) => {
    const pipe = g.pipeline(l.spec);
    const bytes = paramBytes(l.params);
    const ub = dev.createBuffer({
      size: bytes.byteLength,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    dev.queue.writeBuffer(ub, 0, bytes);
    const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: ub } }];
    l.buffers.forEach((b, i) =>
      entries.push({ binding: i + 1, resource: b instanceof GPUBuffer ? { buffer: b } : b })
    );
    return { pipe, group: dev.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries }) };
  });
  const enc = dev.createCommandEncoder();
  const pass = enc.beginComputePass({
    timestampWrites: { querySet: qs, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
  });
  for (let r = 0; r < reps; r++) {
    launches.forEach((l, i) => {
      pass.setPipeline(groups[i].pipe);
      pass.setBindGroup(0, groups[i].group);
      const [x, y = 1] = l.workgroups;
      pass.dispatchWorkgroups(x, y);
    });
  }
  pass.end();
  enc.resolveQuerySet(qs, 0, 2, resolve, 0);
  enc.copyBufferToBuffer(resolve, 0, read, 0, 16);
  dev.queue.submit([enc.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const [t0, t1] = new BigUint64Array(read.getMappedRange());
  const ns = Number(t1 - t0);
  read.unmap();
  return ns / reps / 1e9;
}

async function measure(N: number): Promise<void> {
  const rows = Math.min(N, CHUNK);
  const chunks = N / rows;
  const xs = randomLogits(rows, 7);
  const ts = Int32Array.from({ length: rows }, (_, i) => (i * 7919) % V);
  const logits = Array.from({ length: chunks }, () => Tensor.from(xs, [rows, V]).keep());
  const targets = Tensor.from(ts, [rows], "i32").keep();
  const bytes = N * V * 4;
  for (const withEntropy of [false, true]) {
    const fused = await wallPerCall(() => {
      for (const l of logits) logprobEntropy(l, targets, { withEntropy });
    });
    const unfused = await wallPerCall(() => {
      for (const l of logits) unfusedLogProbs(l, targets, { withEntropy });
    });
    emit({
      clock: "wall",
      N,
      V,
      entropy: withEntropy,
      fused_ms: +(fused * 1e3).toFixed(3),
      unfused_ms: +(unfused * 1e3).toFixed(3),
      speedup: +(unfused / fused).toFixed(2),
      fused_read_GBps: +(bytes / fused / 1e9).toFixed(1),
    });
    if (!g.hasTimestamps) continue;
    const params = packParams([rows, V, { f32: 1 }, 0]);
    const out = Tensor.empty([2, rows]).keep(), saved = Tensor.empty([2, rows]).keep();
    const lsm = Tensor.empty([rows, V]).keep(), picked = Tensor.empty([rows]).keep();
    const fwd = logprobKernel("forward", { vocab: V, withEntropy });
    const fusedLaunch = logits.map((l): Launch => ({
      spec: fwd.spec,
      params,
      buffers: [l.buffer, targets.buffer, out.buffer, saved.buffer],
      workgroups: grid1d(rows, fwd.perGroup),
    }));
    const launch = (entry: "log_softmax" | "gather" | "entropy", buffers: Binding[]): Launch => {
      const { spec, perGroup } = unfusedKernel(entry);
      return { spec, params, buffers, workgroups: grid1d(rows, perGroup) };
    };
    const unfusedLaunch = logits.flatMap((l): Launch[] => [
      launch("log_softmax", [l.buffer, lsm.buffer]),
      launch("gather", [lsm.buffer, targets.buffer, picked.buffer]),
      ...(withEntropy ? [launch("entropy", [lsm.buffer, out.buffer])] : []),
    ]);
    const f = await gpuPerRep(fusedLaunch), u = await gpuPerRep(unfusedLaunch);
    emit({
      clock: "gpu",
      N,
      V,
      entropy: withEntropy,
      fused_ms: +(f * 1e3).toFixed(3),
      unfused_ms: +(u * 1e3).toFixed(3),
      speedup: +(u / f).toFixed(2),
      fused_read_GBps: +(bytes / f / 1e9).toFixed(1),
    });
    for (const t of [out, saved, lsm, picked]) t.dispose();
  }
  // forward + the fused backward (one elementwise pass reading logits, writing d logits)
  const seed = Tensor.from(new Float32Array(rows).fill(1), [rows]).keep();
  const fwdBwd = await wallPerCall(() => {
    for (const l of logits) {
      l.requiresGrad = true;
      const o = logprobEntropy(l, targets, { withEntropy: true });
      backward([o.logProbs, o.entropy!], [seed, seed]);
      zeroGrad([l]);
    }
  });
  emit({ clock: "wall", N, V, fused_forward_backward_ms: +(fwdBwd * 1e3).toFixed(3) });
  // accuracy on this GPU: the first rows against the f64 reference, and fused against unfused
  const check = Math.min(rows, 8);
  const o = logprobEntropy(logits[0], targets, { withEntropy: true });
  const un = unfusedLogProbs(logits[0], targets, { withEntropy: true });
  const [lp, ent, ulp, uent] = await Promise.all(
    [o.logProbs, o.entropy!, un.logProbs, un.entropy!].map((t) => t.toArray()),
  );
  const ref = logprobEntropyRef(xs.subarray(0, check * V), ts.subarray(0, check));
  const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>, n: number) => {
    let m = 0;
    for (let i = 0; i < n; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
    return m;
  };
  emit({
    check: "accuracy",
    N: rows,
    V,
    lp_vs_ref: maxDiff(lp, ref.logProbs, check),
    ent_vs_ref: maxDiff(ent, ref.entropy, check),
    lp_fused_vs_unfused: maxDiff(lp, ulp, rows),
    ent_fused_vs_unfused: maxDiff(ent, uent, rows),
  });
  for (const t of [...logits, targets, seed]) t.dispose();
}

for (const N of quick ? [64] : [512, 4096]) await measure(N);
