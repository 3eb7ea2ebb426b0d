/**
 * How long one GPU -> host read takes with nothing else queued: N reads of 4 bytes, each after one
 * copy, timed around `mapAsync`. In Deno a read waits for the whole queue and then at least 10 ms
 * more, which is why the engine and `generate` read tokens back once per several steps.
 *   deno run -A bench/read_latency.ts [--reads=20]
 */
const reads = Number(Deno.args.find((a) => a.startsWith("--reads="))?.split("=")[1] ?? 20);
const adapter = await navigator.gpu.requestAdapter();
if (!adapter) throw new Error("read_latency: no WebGPU adapter");
const device = await adapter.requestDevice();
const src = device.createBuffer({
  size: 4,
  usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
});
const ms: number[] = [];
for (let i = 0; i < reads; i++) {
  const dst = device.createBuffer({
    size: 4,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, dst, 0, 4);
  device.queue.submit([enc.finish()]);
  const t0 = performance.now();
  await dst.mapAsync(GPUMapMode.READ);
  ms.push(performance.now() - t0);
  dst.unmap();
  dst.destroy();
}
ms.sort((a, b) => a - b);
const round = (x: number) => Math.round(x * 100) / 100;
console.log(JSON.stringify({
  bench: "read_latency",
  reads,
  min_ms: round(ms[0]),
  median_ms: round(ms[Math.floor(reads / 2)]),
  max_ms: round(ms[reads - 1]),
}));
