/**
 * Training attention on a real GPU: the GEMM path against the flash-style row kernels
 * (`attentionPolicy.gemm` "always" / "never") on the same inputs in one process, one JSON line per
 * measurement (a third path runs the GEMM backward's dK and dV per kv head, `keySidePerHead`
 * false; two more run precision "f16", mixed-precision training's attention, with the packed
 * operands stored as halves and as rounded f32):
 *   deno run -A bench/attention_device.ts [--shapes=16x384,16x1024] [--reps=5] [--per-span=10]
 *     [--pads=40] [--budget-mib=256] [--paths=flash,gemm,...] [--profile]
 * Each shape is B x T with Hq 14, Hkv 2, D 64 (Qwen2.5-0.5B), causal, every fourth batch row left-
 * padded by `pads` keys. Times are GPU timestamps (wall time around a sync without them), the
 * median of `reps` spans of `per-span` calls: the forward alone (no grad) and forward + backward.
 * TFLOP/s count the causal half only: 4 B Hq D T (T + 1) / 2 for the forward, 3.5 times that with
 * the backward. `max_abs_diff` compares the row kernels' output and q, k, v gradients with the GEMM
 * path's, and the f16 path's with the f32 GEMM path's. --profile adds a per-kernel breakdown of one
 * forward + backward of each path.
 */
import { gpu, initGpu } from "../src/gpu/mod.ts";
import { attentionPolicy, type AttentionPrecision } from "../src/tensor/mod.ts";
import { backward, noGrad, scope, Tensor } from "../src/tensor/mod.ts";
import { attention } from "../src/tensor/mod.ts";
import { randomArray } from "../src/testing/mod.ts";
import { timeGpu } from "./gpu_timer.ts";

const args = new Map(Deno.args.map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const shapes = (args.get("shapes") ?? "16x384,16x1024").split(",").map((s) =>
  s.split("x").map(Number)
);
const reps = Number(args.get("reps") ?? 5);
const perSpan = Number(args.get("per-span") ?? 10);
const pads = Number(args.get("pads") ?? 40);
attentionPolicy.budgetBytes = Number(args.get("budget-mib") ?? 256) * 2 ** 20;
const g = await initGpu();
const Hq = 14, Hkv = 2, D = 64;

function emit(o: Record<string, unknown>): void {
  console.log(JSON.stringify({ adapter: g.adapterName, ...o }));
}

function inputs(B: number, T: number) {
  const q = Tensor.from(randomArray(B * T * Hq * D, 1), [B, T, Hq, D]).keep();
  const k = Tensor.from(randomArray(B * T * Hkv * D, 2), [B, T, Hkv, D]).keep();
  const v = Tensor.from(randomArray(B * T * Hkv * D, 3), [B, T, Hkv, D]).keep();
  const mask = new Int32Array(B * T).fill(1);
  for (let b = 0; b < B; b += 4) mask.fill(0, b * T, b * T + Math.min(pads, T));
  const keyMask = Tensor.from(mask, [B, T], "i32").keep();
  const dout = Tensor.from(randomArray(B * T * Hq * D, 4), q.shape).keep();
  return { q, k, v, keyMask, dout };
}

type Inputs = ReturnType<typeof inputs>;

type Policy = Partial<typeof attentionPolicy> & { precision?: AttentionPrecision };

/**
 * The paths compared: the row kernels, the GEMM path, it with dK / dV per kv head, and the GEMM
 * path in precision f16 with halves (where the GPU has shader-f16) or rounded f32 as operands.
 */
const ALL_PATHS: Record<string, Policy> = {
  flash: { gemm: "never" },
  gemm: { gemm: "always", keySidePerHead: true },
  gemm_key_side_per_kv_head: { gemm: "always", keySidePerHead: false },
  gemm_f16: { gemm: "always", precision: "f16", f16Operands: true },
  gemm_f16_f32_operands: { gemm: "always", precision: "f16", f16Operands: false },
};
const chosen = args.get("paths")?.split(",") ?? Object.keys(ALL_PATHS);
for (const p of chosen) if (!(p in ALL_PATHS)) throw new Error(`--paths: no path "${p}"`);
const PATHS = Object.fromEntries(chosen.map((p) => [p, ALL_PATHS[p]]));

let precision: AttentionPrecision = "f32";

/** Runs `fn` under `policy`, restored once its promise settles (not when it first yields). */
async function withPolicy<R>(policy: Policy, fn: () => R | Promise<R>): Promise<R> {
  const saved = { ...attentionPolicy };
  const { precision: p, ...rest } = policy;
  Object.assign(attentionPolicy, rest);
  precision = p ?? "f32";
  try {
    return await fn();
  } finally {
    Object.assign(attentionPolicy, saved);
    precision = "f32";
  }
}

const forward = (x: Inputs) =>
  noGrad(() => scope(() => attention(x.q, x.k, x.v, { keyMask: x.keyMask, precision }).dispose()));

function train(x: Inputs): Tensor[] {
  for (const t of [x.q, x.k, x.v]) t.requiresGrad = true;
  const out = attention(x.q, x.k, x.v, { keyMask: x.keyMask, precision });
  backward(out, x.dout);
  const res = [out, x.q.grad!, x.k.grad!, x.v.grad!];
  for (const t of [x.q, x.k, x.v]) {
    t.requiresGrad = false;
    t.grad = null;
  }
  return res;
}

async function results(x: Inputs, policy: Policy): Promise<Float32Array[]> {
  const ts = await withPolicy(policy, () => scope(() => train(x).map((t) => t.keep())));
  const arrays = await Promise.all(ts.map((t) => t.toArray() as Promise<Float32Array>));
  for (const t of ts) t.dispose();
  return arrays;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

for (const [B, T] of shapes) {
  const x = inputs(B, T);
  const shape = { B, T, Hq, Hkv, D, causal: true, pads, padded_rows: Math.ceil(B / 4) };
  const names = ["out", "dq", "dk", "dv"];
  const gm = await results(x, ALL_PATHS.gemm);
  for (const other of ["flash", "gemm_f16"].filter((p) => p in PATHS)) {
    const o = await results(x, PATHS[other]);
    const diff = Object.fromEntries(names.map((n, i) => [n, maxAbsDiff(o[i], gm[i])]));
    emit({ name: "attention_paths_diff", paths: [other, "gemm"], ...shape, max_abs_diff: diff });
  }
  const flops = 4 * B * Hq * D * T * (T + 1) / 2;
  for (const [path, policy] of Object.entries(PATHS)) {
    for (
      const [pass, fn, f] of [
        ["fwd", () => forward(x), flops],
        ["fwd+bwd", () => scope(() => void train(x)), 3.5 * flops],
      ] as const
    ) {
      const t = await withPolicy(policy, () => timeGpu(fn, { reps, warmup: 2, perSpan }));
      emit({
        name: "attention",
        path,
        operands: policy.precision !== "f16"
          ? "f32"
          : policy.f16Operands && g.hasF16
          ? "f16"
          : "f32 (rounded)",
        pass,
        ...shape,
        ms: +t.medianMs.toFixed(4),
        causal_tflops: +(f / (t.medianMs * 1e9)).toFixed(3),
        timer: t.gpuTimed ? "timestamp" : "wall",
      });
    }
    if (args.has("profile") && g.hasTimestamps) {
      const kernels = await withPolicy(
        policy,
        () => g.profile(() => scope(() => void train(x)), { byPipeline: true }),
      );
      emit({ name: "attention_profile", path, B, T, kernels: kernels.slice(0, 12) });
    }
  }
  for (const t of Object.values(x)) t.dispose();
  g.pool.trim();
}
await gpu().sync();
