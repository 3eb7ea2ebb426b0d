// Probes the adapter for cooperative-matrix (tensor core) support and checks one 16x16x16 f16
// product with f32 accumulation against a CPU reference, for each load/store spelling.
const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
if (!adapter) throw new Error("no adapter");
console.log(JSON.stringify({ features: [...adapter.features].sort(), info: adapter.info }));
const want = ["shader-f16", "wgpu-cooperative-matrix"].filter((f) => adapter.features.has(f as GPUFeatureName));
const device = await adapter.requestDevice({ requiredFeatures: want as GPUFeatureName[] });
console.log("device features", [...device.features].sort().join(","));
const n = 16;
const a = new Float32Array(n * n).map((_, i) => ((i * 7) % 13) / 8 - 0.7);
const b = new Float32Array(n * n).map((_, i) => ((i * 5) % 11) / 8 - 0.6);
function buf(data: Float32Array | Uint16Array, usage: number) {
  const g = device.createBuffer({ size: Math.max(16, data.byteLength), usage, mappedAtCreation: true });
  new (data.constructor as any)(g.getMappedRange()).set(data);
  g.unmap();
  return g;
}
function toHalf(x: Float32Array) {
  const f = new Float32Array(1), u = new Uint32Array(f.buffer);
  return Uint16Array.from(x, (v) => {
    f[0] = v; const bits = u[0]; const s = (bits >>> 16) & 0x8000; const e = ((bits >>> 23) & 0xff) - 127 + 15;
    const m = (bits >>> 13) & 0x3ff; return e <= 0 ? s : s | (e << 10) | m;
  });
}
function back(x: Uint16Array) {
  return Float32Array.from(x, (h) => { const s = h & 0x8000 ? -1 : 1; const e = (h >> 10) & 31; const m = h & 1023;
    return e === 0 ? s * m * 2 ** -24 : s * (1 + m / 1024) * 2 ** (e - 15); });
}
const ah = toHalf(a), bh = toHalf(b);
const ar = back(ah), br = back(bh);
const ref = new Float32Array(n * n);
for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) { let s = 0; for (let k = 0; k < n; k++) s += ar[i * n + k] * br[k * n + j]; ref[i * n + j] = s; }
const refT = new Float32Array(n * n); // (A^T B^T)^T etc. are detected by comparing several
for (const [load, store] of [["coopLoad", "coopStore"], ["coopLoadT", "coopStoreT"], ["coopLoad", "coopStoreT"], ["coopLoadT", "coopStore"]]) {
  const code = `enable f16;\nenable wgpu_cooperative_matrix;\n@group(0) @binding(0) var<storage, read> a: array<f16>;\n@group(0) @binding(1) var<storage, read> b: array<f16>;\n@group(0) @binding(2) var<storage, read_write> c: array<f32>;\n@compute @workgroup_size(32)\nfn main() {\n  let x = ${load}<coop_mat16x16<f16, A>>(&a[0], 16u);\n  let y = ${load}<coop_mat16x16<f16, B>>(&b[0], 16u);\n  var acc = coop_mat16x16<f32, C>();\n  acc = coopMultiplyAdd(x, y, acc);\n  ${store}(acc, &c[0], 16u);\n}\n`;
  try {
    device.pushErrorScope("validation");
    const module = device.createShaderModule({ code });
    const info = await module.getCompilationInfo();
    for (const m of info.messages) console.log(load, store, m.type, m.message);
    const pipe = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
    const S = GPUBufferUsage.STORAGE, C = GPUBufferUsage.COPY_SRC;
    const ga = buf(ah, S), gb = buf(bh, S);
    const gc = device.createBuffer({ size: n * n * 4, usage: S | C });
    const rd = device.createBuffer({ size: n * n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const bg = device.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries: [ga, gb, gc].map((buffer, binding) => ({ binding, resource: { buffer } })) });
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass(); pass.setPipeline(pipe); pass.setBindGroup(0, bg); pass.dispatchWorkgroups(1); pass.end();
    enc.copyBufferToBuffer(gc, 0, rd, 0, n * n * 4);
    device.queue.submit([enc.finish()]);
    const err = await device.popErrorScope();
    if (err) { console.log(load, store, "error", err.message); continue; }
    await rd.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(rd.getMappedRange().slice(0));
    let e = 0, eT = 0;
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) { e = Math.max(e, Math.abs(out[i * n + j] - ref[i * n + j])); eT = Math.max(eT, Math.abs(out[j * n + i] - ref[i * n + j])); }
    console.log(JSON.stringify({ load, store, maxErrVsAB: e, maxErrVsABtransposed: eT, sample: Array.from(out.slice(0, 4)), ref: Array.from(ref.slice(0, 4)) }));
  } catch (err) { console.log(load, store, "threw", String(err)); }
}
void refT;
