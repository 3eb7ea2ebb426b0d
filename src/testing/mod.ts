/**
 * Shared test helpers: a GPU test wrapper (one device per process, intermediates released per
 * test), tolerance checks that name the worst element, a seeded PRNG and finite differences.
 */
import { initGpu } from "../gpu/mod.ts";
import { mulberry32, scopeAsync, uniformArray } from "../tensor/mod.ts";

/**
 * Whether this machine's adapter has shader-f16, known before any test registers: f16-only
 * tests are then reported as ignored where it is missing, not as passed.
 */
const adapter = await (globalThis as { navigator?: Navigator }).navigator?.gpu?.requestAdapter();
const adapterHasF16 = adapter?.features.has("shader-f16") ?? false;
const adapterHasTimestamps = adapter?.features.has("timestamp-query") ?? false;

export interface GpuTestOptions {
  /** The test needs shader-f16: ignored on adapters without it (the CPU adapter in CI). */
  f16?: boolean;
  /** The test needs timestamp queries (profiling): ignored on adapters without them. */
  timestamps?: boolean;
}

/** Registers a Deno test that runs on the GPU (the CPU adapter in CI). */
export function gpuTest(
  name: string,
  fn: () => Promise<void> | void,
  options: GpuTestOptions = {},
): void {
  Deno.test({
    name,
    ignore: (options.f16 === true && !adapterHasF16) ||
      (options.timestamps === true && !adapterHasTimestamps),
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      await initGpu({ adapter: adapter ?? undefined }); // the adapter probed above: one per process
      await scopeAsync(async () => {
        await fn();
      });
    },
  });
}

/** Asserts |a - e| <= atol + rtol * |e| elementwise; the message names the worst index. */
export function assertClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  options: { atol?: number; rtol?: number; label?: string } = {},
): void {
  const { atol = 1e-5, rtol = 1e-4, label = "values" } = options;
  if (actual.length !== expected.length) {
    throw new Error(`${label}: length ${actual.length} != expected ${expected.length}`);
  }
  let worst = -1;
  let worstExcess = 0;
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i], e = expected[i];
    if (Number.isNaN(a) !== Number.isNaN(e)) {
      throw new Error(`${label}[${i}]: got ${a}, expected ${e}`);
    }
    if (Number.isNaN(e) || a === e) continue;
    const excess = Math.abs(a - e) - (atol + rtol * Math.abs(e));
    if (!(excess <= worstExcess)) {
      worstExcess = excess;
      worst = i;
    }
  }
  if (worst >= 0) {
    throw new Error(
      `${label}[${worst}]: got ${actual[worst]}, expected ${expected[worst]} ` +
        `(atol ${atol}, rtol ${rtol}, ${actual.length} elements)`,
    );
  }
}

export { mulberry32 as rng, uniformArray as randomArray };

/** Central finite differences of a scalar function of x (f64), for gradient checks. */
export function finiteDiff(
  f: (x: Float64Array) => number,
  x: ArrayLike<number>,
  eps = 1e-3,
): Float64Array {
  const xs = Float64Array.from(x);
  const g = new Float64Array(xs.length);
  for (let i = 0; i < xs.length; i++) {
    const v = xs[i];
    xs[i] = v + eps;
    const fp = f(xs);
    xs[i] = v - eps;
    const fm = f(xs);
    xs[i] = v;
    g[i] = (fp - fm) / (2 * eps);
  }
  return g;
}

/**
 * Left-padded random prompts: `pads[b]` leading pad tokens (id 0, mask 0) in row b, then ids drawn
 * from [3, vocab), clear of the low special ids (pad 0, the test configs' EOS 2). ids/mask [B, T]
 */
export function leftPadded(
  batch: number,
  seqLen: number,
  pads: number[],
  vocab: number,
  seed: number,
): { ids: Int32Array; mask: Int32Array } {
  const r = mulberry32(seed);
  const ids = new Int32Array(batch * seqLen);
  const mask = new Int32Array(batch * seqLen);
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < seqLen; t++) {
      const real = t >= pads[b];
      mask[b * seqLen + t] = real ? 1 : 0;
      ids[b * seqLen + t] = real ? 3 + Math.floor(r() * (vocab - 3)) : 0;
    }
  }
  return { ids, mask };
}
