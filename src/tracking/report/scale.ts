/** Axis arithmetic for the report's charts: nice tick steps and short tick labels. */

/** Ticks covering [lo, hi] at 1, 2 or 5 times a power of ten; `integer` keeps steps >= 1. */
export function niceTicks(lo: number, hi: number, count = 5, integer = false): number[] {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) throw new Error("niceTicks: non-finite range");
  if (hi < lo) [lo, hi] = [hi, lo];
  if (hi === lo) [lo, hi] = lo === 0 ? [0, 1] : [lo - Math.abs(lo) / 2, hi + Math.abs(lo) / 2];
  const raw = (hi - lo) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  if (integer) step = Math.max(1, Math.round(step));
  const first = Math.floor(lo / step + 1e-9), last = Math.ceil(hi / step - 1e-9);
  const out: number[] = [];
  for (let i = first; i <= last; i++) out.push(clean(i * step, step));
  return out;
}

/** Removes float noise such as 0.30000000000000004 and -0. */
function clean(v: number, step: number): number {
  const digits = Math.max(0, -Math.floor(Math.log10(step)) + 1);
  const r = Number(v.toFixed(Math.min(20, digits)));
  return r === 0 ? 0 : r;
}

/** A tick label short enough for an axis: 0.25, 1.5k, 2M, 1e-4. */
export function formatTick(v: number, step: number): string {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e6) return `${trim((v / 1e6).toFixed(decimals(step / 1e6)))}M`;
  if (a >= 1e4) return `${trim((v / 1e3).toFixed(decimals(step / 1e3)))}k`;
  if (step < 1e-3) {
    const sig = Math.floor(Math.log10(a) + 1e-9) - Math.floor(Math.log10(step) + 1e-9);
    return trim(v.toExponential(Math.max(0, Math.min(3, sig))));
  }
  return v.toFixed(decimals(step));
}

function decimals(step: number): number {
  return Math.max(0, Math.min(8, -Math.floor(Math.log10(step) + 1e-9)));
}

function trim(s: string): string {
  return s.includes(".") && !s.includes("e") ? s.replace(/\.?0+$/, "") : s.replace(/\.?0+e/, "e");
}

/** A value for a table or a legend: 4 significant digits, no exponent for everyday sizes. */
export function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e6 || a < 1e-3) return v.toExponential(3).replace(/\.?0+e/, "e");
  return String(Number(v.toPrecision(4)));
}
