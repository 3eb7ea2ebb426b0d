/**
 * The tiled kernel's equivalent K-loop forms (`tileForms`: loads unchecked on whole blocks,
 * where the next stage's reads are issued) timed per layout, for picking
 * each layout's form on a GPU. One JSON line per (layout, shape, form) with TFLOP/s, then one
 * `"fig":"best"` line per layout and shape (ranked by the median of `--rounds` rounds, the forms
 * interleaved within each round):
 *   deno run -A bench/gemm_forms_device.ts [--shapes=4096x4096x4096,6144x896x4864,6144x4864x896]
 *     [--layouts=nn,nt,tn] [--fetch-at=0,4] [--rounds=2] [--reps=10] [--b-f16]
 * A shape is MxNxK of op(A) @ op(B) with the large tile; every form's output is compared bit for
 * bit with the default form's (the forms differ in schedule only). `--b-f16` stores B in f16 (the
 * frozen LoRA base's products; their forms are `tileForms`' `*_f16` entries).
 */
import { gpu, initGpu } from "../src/gpu/mod.ts";
import {
  formKey,
  type GemmLayout,
  matmulTiled,
  roundToF16,
  Tensor,
  type TileForm,
  tileForms,
  TILES,
} from "../src/tensor/mod.ts";
import { randomArray } from "../src/testing/mod.ts";
import { timeGpu } from "./gpu_timer.ts";

const args = new Map(Deno.args.map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const list = (key: string, fallback: string) => (args.get(key) ?? fallback).split(",");
const shapes = list("shapes", "4096x4096x4096,6144x896x4864,6144x4864x896")
  .map((s) => s.split("x").map(Number) as [number, number, number]);
const layouts = list("layouts", "nn,nt,tn") as GemmLayout[];
const fetchAts = list("fetch-at", "0,4").map(Number) as TileForm["fetchAt"][];
for (const f of fetchAts) if (f !== 0 && f !== 4) throw new Error(`--fetch-at: ${f} is not 0 or 4`);
const rounds = Number(args.get("rounds") ?? 2);
const reps = Number(args.get("reps") ?? 10);
const bF16 = args.has("b-f16");
const g = await initGpu();

function forms(): TileForm[] {
  const out: TileForm[] = [];
  for (const exactA of [true, false]) {
    for (const exactB of [true, false]) {
      for (const fetchAt of fetchAts) out.push({ exactA, exactB, fetchAt });
    }
  }
  return out;
}

const name = (v: TileForm) => `${v.exactA ? "A" : "a"}${v.exactB ? "B" : "b"}${v.fetchAt}`;

for (const [m, n, k] of shapes) {
  for (const layout of layouts) {
    const [transA, transB] = [layout[0] === "t", layout[1] === "t"];
    const A = Tensor.from(randomArray(m * k, 1), transA ? [k, m] : [m, k]);
    // Values an f16 B holds exactly, so that both storage types multiply the same numbers.
    const bData = randomArray(n * k, 2).map(roundToF16);
    const B = Tensor.from(bData, transB ? [n, k] : [k, n], bF16 ? "f16" : "f32");
    const opts = { transA, transB, tile: TILES.large };
    const key = formKey(layout, bF16);
    const saved = { ...tileForms[key] };
    const run = async (v: TileForm) => {
      tileForms[key] = v;
      const c = matmulTiled(A, B, opts);
      const out = new Float32Array(await c.toArray());
      c.dispose();
      return out;
    };
    const reference = await run(saved);
    const times = new Map<string, number[]>();
    for (let round = 0; round < rounds; round++) {
      for (const v of forms()) {
        const out = await run(v);
        const same = out.every((x, i) => Object.is(x, reference[i]));
        const perSpan = Math.max(1, Math.round(reps * 4096 ** 3 / (m * n * k)));
        const t = await timeGpu(() => matmulTiled(A, B, opts).dispose(), { reps: 5, perSpan });
        const tflops = 2 * m * n * k / (t.medianMs * 1e9);
        times.set(name(v), [...(times.get(name(v)) ?? []), tflops]);
        console.log(JSON.stringify({
          layout: key,
          shape: `${m}x${n}x${k}`,
          form: name(v),
          ...v,
          round,
          tflops: +tflops.toFixed(2),
          same,
        }));
        if (!same) throw new Error(`form ${name(v)} of ${layout} changed the product`);
      }
    }
    tileForms[key] = saved;
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
    const ranked = [...times].map(([form, xs]) => ({ form, tflops: median(xs) }))
      .sort((a, b) => b.tflops - a.tflops);
    console.log(JSON.stringify({
      fig: "best",
      layout: key,
      shape: `${m}x${n}x${k}`,
      adapter: g.adapterName,
      current: ranked.find((r) => r.form === name(saved)),
      top: ranked.slice(0, 5),
    }));
    A.dispose();
    B.dispose();
    g.pool.trim();
  }
}
await gpu().sync();
