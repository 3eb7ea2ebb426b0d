/**
 * Which matrix-unit paths this adapter offers WebGPU: its feature list, then one 16x16x16
 * product of f16 tiles with f32 accumulation through `enable wgpu_cooperative_matrix` (each
 * load/store spelling), checked against a CPU product of the same halves. Tensor cores are
 * reachable from WGSL only where this passes.
 *
 *   deno run -A bench/coop_probe.ts
 */
import { f16BitsToF32 as halfToFloat, f32ToF16Bits as f16Bits } from "../src/tensor/mod.ts";

const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
if (!adapter) throw new Error("no WebGPU adapter");
const features: string[] = [...adapter.features].sort();
console.log(JSON.stringify({ probe: "features", features }));
const want = features.filter((f) => f === "shader-f16" || f === "wgpu-cooperative-matrix");
const device = await adapter.requestDevice({ requiredFeatures: want as GPUFeatureName[] });

const n = 16;
const halves = (seed: number) =>
  Uint16Array.from({ length: n * n }, (_, i) => f16Bits((((i * seed) % 13) - 6) / 8));
const a = halves(7), b = halves(5);
const ref = new Float32Array(n * n);
for (let i = 0; i < n; i++) {
  for (let j = 0; j < n; j++) {
    for (let k = 0; k < n; k++) {
      ref[i * n + j] += halfToFloat(a[i * n + k]) * halfToFloat(b[k * n + j]);
    }
  }
}
const upload = (data: Uint16Array) => {
  const buf = device.createBuffer({
    size: data.byteLength,
    usage: GPUBufferUsage.STORAGE,
    mappedAtCreation: true,
  });
  new Uint16Array(buf.getMappedRange()).set(data);
  buf.unmap();
  return buf;
};
for (const [load, store] of [["coopLoad", "coopStore"], ["coopLoadT", "coopStoreT"]]) {
  const code = `enable f16;
enable wgpu_cooperative_matrix;
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@compute @workgroup_size(32)
fn main() {
  let x = ${load}<coop_mat16x16<f16, A>>(&a[0], 16u);
  let y = ${load}<coop_mat16x16<f16, B>>(&b[0], 16u);
  ${store}(coopMultiplyAdd(x, y, coop_mat16x16<f32, C>()), &c[0], 16u);
}`;
  device.pushErrorScope("validation");
  const module = device.createShaderModule({ code });
  const pipeline = device.createComputePipeline({
    layout: "auto",
    compute: { module, entryPoint: "main" },
  });
  const out = device.createBuffer({
    size: n * n * 4,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
  });
  const read = device.createBuffer({
    size: n * n * 4,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(
    0,
    device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [upload(a), upload(b), out].map((buffer, binding) => ({
        binding,
        resource: { buffer },
      })),
    }),
  );
  pass.dispatchWorkgroups(1);
  pass.end();
  enc.copyBufferToBuffer(out, 0, read, 0, n * n * 4);
  device.queue.submit([enc.finish()]);
  const error = await device.popErrorScope();
  if (error) {
    console.log(
      JSON.stringify({ probe: load, ok: false, error: error.message.trim().split("\n")[0] }),
    );
    continue;
  }
  await read.mapAsync(GPUMapMode.READ);
  const got = new Float32Array(read.getMappedRange());
  let err = 0, errT = 0;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      err = Math.max(err, Math.abs(got[i * n + j] - ref[i * n + j]));
      errT = Math.max(errT, Math.abs(got[j * n + i] - ref[i * n + j]));
    }
  }
  console.log(JSON.stringify({ probe: load, ok: true, max_err: err, max_err_transposed: errT }));
}
