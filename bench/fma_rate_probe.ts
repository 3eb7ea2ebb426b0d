/**
 * Multiply-add throughput of the adapter's shader cores by number type: vec4<f32> fma, vec4<f16>
 * and vec2<f16> fma (packed halves), and halves summed over eight steps into an f32 total (the
 * shape an f16-math GEMM with f32 sums between k chunks would have). Each invocation runs eight
 * independent chains, eight steps written out per loop trip; one dispatch is timed by wall clock
 * around a full sync, long enough (tens of ms) that the sync's cost is small. Prints one JSON line
 * per kind with TFLOP/s (2 per lane).
 *
 *   deno run -A bench/fma_rate_probe.ts [--iters=4096] [--groups=8192]
 */
const opt = (name: string, d: number) =>
  Number(Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d);
const iters = opt("iters", 4096), groups = opt("groups", 8192), wg = 256;

const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
if (!adapter) throw new Error("no WebGPU adapter");
const hasF16 = adapter.features.has("shader-f16");
const device = await adapter.requestDevice({
  requiredFeatures: hasF16 ? ["shader-f16"] : [],
});

/** `t`: the vector type; `lanes`: its lanes; `mixed`: f16 chains folded into f32 every 8 steps. */
function kernel(t: string, lanes: number, mixed = false): string {
  const scalar = t.includes("f16") ? "f16" : "f32";
  const chains = Array.from({ length: 8 }, (_, i) => i);
  const init = chains.map((i) => `var c${i} = ${t}(x + ${scalar}(${i}));`).join("\n  ");
  const step = chains.map((i) => `c${i} = fma(c${i}, m, a);`).join("\n      ");
  const fold = mixed
    ? chains.map((i) => `s${i} += vec2<f32>(c${i}); c${i} = ${t}(x);`).join("\n      ")
    : "";
  const sums = mixed ? chains.map((i) => `var s${i} = vec2<f32>(0.0);`).join("\n  ") : "";
  const total = mixed
    ? chains.map((i) => `s${i}.x + s${i}.y`).join(" + ")
    : chains.map((i) => `dot(vec${lanes}<f32>(c${i}), vec${lanes}<f32>(1.0))`).join(" + ");
  return `${t.includes("f16") ? "enable f16;" : ""}
@group(0) @binding(0) var<storage, read_write> io: array<f32>;
@compute @workgroup_size(${wg})
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let x = ${scalar}(io[id.x % 64u]);
  let m = ${t}(${scalar}(io[1]));
  let a = ${t}(${scalar}(io[2]));
  ${init}
  ${sums}
  for (var i = 0u; i < ${iters / 8}u; i++) {
      ${Array(8).fill(step).join("\n      ")}
    ${fold}
  }
  let total = ${total};
  if (total == 12345.0) { io[id.x] = total; }
}`;
}

const io = device.createBuffer({ size: 4 * wg * groups * 2, usage: GPUBufferUsage.STORAGE });
const kinds: [string, string, number, boolean][] = [
  ["vec4<f32>", "vec4<f32>", 4, false],
  ["vec4<f16>", "vec4<f16>", 4, false],
  ["vec2<f16>", "vec2<f16>", 2, false],
  ["vec2<f16> summed into f32 every 8", "vec2<f16>", 2, true],
];
for (const [name, t, lanes, mixed] of kinds) {
  if (t.includes("f16") && !hasF16) continue;
  const module = device.createShaderModule({ code: kernel(t, lanes, mixed) });
  const pipeline = device.createComputePipeline({
    layout: "auto",
    compute: { module, entryPoint: "main" },
  });
  const bind = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: io } }],
  });
  const run = async (reps: number) => {
    const enc = device.createCommandEncoder();
    for (let r = 0; r < reps; r++) {
      const pass = enc.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bind);
      pass.dispatchWorkgroups(groups);
      pass.end();
    }
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    return (performance.now() - t0) / 1000;
  };
  await run(2); // compiled, clocks up
  const reps = 5;
  const s = await run(reps);
  const flops = 2 * lanes * 8 * iters * wg * groups * reps;
  console.log(JSON.stringify({
    probe: "fma_rate",
    kind: name,
    ms_per_dispatch: Math.round((s / reps) * 1e5) / 100,
    tflops: Math.round((flops / s / 1e12) * 10) / 10,
  }));
}
