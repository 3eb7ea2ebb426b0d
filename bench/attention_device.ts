/**
 * Training attention on a real GPU, per kernel variant, in one process: forward and forward +
 * backward at the Qwen2.5-0.5B training shape (B 16, T 384, Hq 14, Hkv 2, D 64, causal, some rows
 * left-padded) and at T 1024, plus a decode step (T 1, 2048 cached keys) that must not move.
 * Variants: `rows` (the row kernels, the default), `tiled` (the register-tiled kernels at their
 * first fitting tiles) and tiles that differ from it in one kernel. Prints one JSON line per (shape, variant,
 * pass): ms per call (median of --spans spans of --reps calls each, timestamp-query where the
 * adapter has it), TFLOP/s (causal FLOPs: forward 2 * 2 * B * Hq * T * T * D / 2, backward 2.5x
 * that; decode: 2 * 2 * B * Hq * S * D) and max_abs_diff of the outputs (and dq, dk, dv) against the `tiled` variant.
 *
 *   deno run -A bench/attention_device.ts [--shapes=train,long,decode] [--variants=rows,tiled,...]
 *     [--reps=10] [--spans=5]
 *   deno run -A bench/attention_device.ts --shapes=tiny --variants=rows,small   # CPU smoke run
 */
import { gpu, initGpu } from "../src/gpu/mod.ts";
import {
  attentionPolicy,
  type AttentionTile,
  attentionTileProblem,
  backward,
  noGrad,
  scope,
  scopeAsync,
  Tensor,
} from "../src/tensor/mod.ts";
import { attention } from "../src/tensor/mod.ts";
import { randomArray } from "../src/testing/mod.ts";
import { timeGpu } from "./gpu_timer.ts";

const g = await initGpu();
const arg = (name: string, def: string) =>
  Deno.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
const emit = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
emit({
  adapter: g.adapterName,
  timestamps: g.hasTimestamps,
  limits: {
    workgroupStorage: g.limits.maxComputeWorkgroupStorageSize,
    invocations: g.limits.maxComputeInvocationsPerWorkgroup,
  },
});

interface Shape {
  B: number;
  T: number;
  S: number;
  Hq: number;
  Hkv: number;
  D: number;
  grad: boolean;
}

const SHAPES: Record<string, Shape> = {
  train: { B: 16, T: 384, S: 384, Hq: 14, Hkv: 2, D: 64, grad: true },
  long: { B: 16, T: 1024, S: 1024, Hq: 14, Hkv: 2, D: 64, grad: true },
  decode: { B: 64, T: 1, S: 2048, Hq: 14, Hkv: 2, D: 64, grad: false },
  tiny: { B: 2, T: 24, S: 24, Hq: 14, Hkv: 2, D: 64, grad: true }, // a smoke run on any adapter
};

type Policy = Partial<Record<"fwd" | "dq" | "dkv", AttentionTile>> & { tiled?: boolean };
const tile = (bq: number, bk: number, ty: number, tx: number) => ({ bq, bk, ty, tx });

/** Each variant changes one kernel's tile from the default (see CANDIDATES in attention_tiles.ts). */
const VARIANTS: Record<string, Policy> = {
  rows: { tiled: false },
  tiled: {},
  fwd_64x32_t128: { fwd: tile(64, 32, 8, 16) },
  fwd_32x32: { fwd: tile(32, 32, 8, 16) },
  fwd_64x16: { fwd: tile(64, 16, 16, 16) },
  fwd_32x16: { fwd: tile(32, 16, 8, 16) },
  dq_64x16: { dq: tile(64, 16, 16, 16) },
  dq_32x32_t256: { dq: tile(32, 32, 16, 16) },
  dq_16x32: { dq: tile(16, 32, 4, 16) },
  dkv_32x32_t256: { dkv: tile(32, 32, 16, 16) },
  dkv_16x32: { dkv: tile(16, 32, 8, 16) },
  dkv_16x48: { dkv: tile(16, 48, 16, 8) },
  small: { fwd: tile(8, 8, 2, 4), dq: tile(8, 8, 2, 4), dkv: tile(8, 8, 2, 4) }, // CPU adapters
};

function setPolicy(p: Policy): void {
  for (const k of ["fwd", "dq", "dkv", "minRows"] as const) delete attentionPolicy[k];
  attentionPolicy.tiled = p.tiled ?? "auto";
  Object.assign(attentionPolicy, { fwd: p.fwd, dq: p.dq, dkv: p.dkv });
  if (p.fwd) attentionPolicy.minRows = 1;
}

function inputs(s: Shape) {
  const q = Tensor.from(randomArray(s.B * s.T * s.Hq * s.D, 1), [s.B, s.T, s.Hq, s.D]).keep();
  const k = Tensor.from(randomArray(s.B * s.S * s.Hkv * s.D, 2), [s.B, s.S, s.Hkv, s.D]).keep();
  const v = Tensor.from(randomArray(s.B * s.S * s.Hkv * s.D, 3), [s.B, s.S, s.Hkv, s.D]).keep();
  // Every fourth row left-padded by a tenth of its length or more, as a GRPO micro-batch has.
  const mask = new Int32Array(s.B * s.S).fill(1);
  for (let b = 0; b < s.B; b += 4) mask.fill(0, b * s.S, b * s.S + Math.floor(s.S / 10) + b);
  const keyMask = Tensor.from(mask, [s.B, s.S], "i32").keep();
  const dout = Tensor.from(randomArray(s.B * s.T * s.Hq * s.D, 4), q.shape).keep();
  return { q, k, v, keyMask, dout };
}

type Inputs = ReturnType<typeof inputs>;

function forward(x: Inputs): void {
  noGrad(() => scope(() => attention(x.q, x.k, x.v, { keyMask: x.keyMask }).dispose()));
}

function forwardBackward(x: Inputs): void {
  scope(() => {
    for (const t of [x.q, x.k, x.v]) t.requiresGrad = true;
    backward(attention(x.q, x.k, x.v, { keyMask: x.keyMask }), x.dout);
    for (const t of [x.q, x.k, x.v]) {
      t.grad?.dispose();
      t.grad = null;
      t.requiresGrad = false;
    }
  });
}

/** out (and dq, dk, dv with grad) of one call, read back. */
async function results(x: Inputs, grad: boolean): Promise<Float32Array[]> {
  return await scopeAsync(async () => {
    for (const t of [x.q, x.k, x.v]) t.requiresGrad = grad;
    const out = attention(x.q, x.k, x.v, { keyMask: x.keyMask });
    const ts = [out];
    if (grad) {
      backward(out, x.dout);
      ts.push(x.q.grad!, x.k.grad!, x.v.grad!);
    }
    const arrays = await Promise.all(ts.map((t) => t.toArray() as Promise<Float32Array>));
    for (const t of [x.q, x.k, x.v]) {
      t.grad?.dispose();
      t.grad = null;
      t.requiresGrad = false;
    }
    return arrays;
  });
}

function maxAbsDiff(a: Float32Array[], b: Float32Array[]): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    for (let j = 0; j < a[i].length; j++) m = Math.max(m, Math.abs(a[i][j] - b[i][j]));
  }
  return m;
}

const reps = Number(arg("reps", "10"));
const spans = Number(arg("spans", "5"));
const wanted = arg("variants", Object.keys(VARIANTS).join(",")).split(",");
for (const name of arg("shapes", "train,long,decode").split(",")) {
  const s = SHAPES[name];
  if (!s) throw new Error(`unknown shape ${name}: one of ${Object.keys(SHAPES).join(", ")}`);
  const x = inputs(s);
  const pairs = s.T === s.S ? s.T * s.S / 2 : s.T * s.S; // causal: half of a square
  const fwdFlops = 4 * s.B * s.Hq * pairs * s.D; // 2 products x 2 flops per multiply-add
  setPolicy(VARIANTS.tiled);
  const want = await results(x, s.grad);
  for (const v of wanted) {
    const policy = VARIANTS[v];
    if (!policy) {
      throw new Error(`unknown variant ${v}: one of ${Object.keys(VARIANTS).join(", ")}`);
    }
    const bad = (["fwd", "dq", "dkv"] as const).map((k) =>
      policy[k] && attentionTileProblem(k, policy[k]!, s.D)
    ).find((w) => w);
    if (bad) {
      emit({ shape: name, variant: v, skipped: bad });
      continue;
    }
    setPolicy(policy);
    const diff = maxAbsDiff(await results(x, s.grad), want);
    const passes = s.grad ? ["fwd", "fwd+bwd"] : ["fwd"];
    for (const pass of passes) {
      const fn = pass === "fwd" ? () => forward(x) : () => forwardBackward(x);
      const t = await timeGpu(fn, { reps: spans, warmup: 2, perSpan: reps });
      const flops = pass === "fwd" ? fwdFlops : 3.5 * fwdFlops;
      emit({
        shape: name,
        variant: v,
        pass,
        ms: +t.medianMs.toFixed(3),
        tflops: +(flops / t.medianMs / 1e9).toFixed(3),
        max_abs_diff: diff,
        gpu_timed: t.gpuTimed,
        ...s,
      });
    }
  }
  for (const t of Object.values(x)) t.dispose();
  await gpu().sync();
}
setPolicy(VARIANTS.tiled);
