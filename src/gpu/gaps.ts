/**
 * Where a GPU sat idle during a profiled run: the union of the timed dispatches' intervals
 * (`Gpu.profile` with `spans`), its busy time, and the gaps between them, each named by the
 * kernels on either side. A gap is time no timed dispatch ran: the host recording, a readback's
 * round trip, a wait on the event loop (and, in a profiled run, each dispatch's own pass).
 */
import type { KernelSpan } from "./recorder.ts";

export interface GpuGap {
  /** Start of the gap, ms after the first dispatch began. */
  atMs: number;
  ms: number;
  /** The kernel that ended last before the gap, and the one that began it. */
  before: string;
  after: string;
}

export interface GpuGaps {
  /** First begin to last end, ms. */
  spanMs: number;
  /** Time at least one dispatch ran, ms. */
  busyMs: number;
  /** The window looked at (the last `lastMs` of the span, or all of it) and its busy time. */
  windowMs: number;
  windowBusyMs: number;
  /** Gaps of at least `minGapMs` in the window, longest first (at most `top`). */
  gaps: GpuGap[];
}

/**
 * `spans` (any order) reduced to busy time and gaps. `lastMs`: look only at the last `lastMs` of
 * the span (a stage that ends the run, such as the update of a training step).
 */
export function gpuGaps(
  spans: readonly KernelSpan[],
  options: { lastMs?: number; minGapMs?: number; top?: number } = {},
): GpuGaps {
  if (spans.length === 0) {
    return { spanMs: 0, busyMs: 0, windowMs: 0, windowBusyMs: 0, gaps: [] };
  }
  const sorted = [...spans].sort((a, b) => (a.begin < b.begin ? -1 : a.begin > b.begin ? 1 : 0));
  const t0 = sorted[0].begin;
  const ms = (t: bigint) => Number(t - t0) / 1e6;
  const end = ms(sorted.reduce((e, s) => (s.end > e ? s.end : e), sorted[0].end));
  const from = Math.max(0, end - (options.lastMs ?? end));
  const minGap = options.minGapMs ?? 0;
  let busy = 0, windowBusy = 0;
  let reach = ms(sorted[0].begin), last = sorted[0].kernel;
  const gaps: GpuGap[] = [];
  for (const s of sorted) {
    const b = ms(s.begin), e = ms(s.end);
    if (b > reach && reach >= from && b - reach >= minGap) {
      gaps.push({ atMs: reach, ms: b - reach, before: last, after: s.kernel });
    }
    const lo = Math.max(b, reach);
    if (e > lo) {
      busy += e - lo;
      windowBusy += Math.max(0, e - Math.max(lo, from));
    }
    if (e > reach) [reach, last] = [e, s.kernel];
  }
  gaps.sort((a, b) => b.ms - a.ms);
  return {
    spanMs: end,
    busyMs: busy,
    windowMs: end - from,
    windowBusyMs: windowBusy,
    gaps: gaps.slice(0, options.top ?? gaps.length),
  };
}

/** GPU time and dispatch count of one kernel within a window. */
export interface KernelTotal {
  kernel: string;
  ms: number;
  count: number;
}

/**
 * The summed duration of each kernel's dispatches that begin within the last `lastMs` of the span
 * (all of it when absent), longest first: where a stage's GPU time goes, by kernel. `byGrid` keeps
 * a kernel's workgroup grids apart (`kernel @ XxYxZ`): which of its shapes take the time.
 */
export function kernelTotals(
  spans: readonly KernelSpan[],
  options: { lastMs?: number; byGrid?: boolean } = {},
): KernelTotal[] {
  if (spans.length === 0) return [];
  let t0 = spans[0].begin, tEnd = spans[0].end;
  for (const s of spans) {
    if (s.begin < t0) t0 = s.begin;
    if (s.end > tEnd) tEnd = s.end;
  }
  const end = Number(tEnd - t0) / 1e6;
  const from = Math.max(0, end - (options.lastMs ?? end));
  const totals = new Map<string, KernelTotal>();
  for (const s of spans) {
    if (Number(s.begin - t0) / 1e6 < from) continue;
    const kernel = options.byGrid ? `${s.kernel} @ ${s.grid ?? "?"}` : s.kernel;
    const t = totals.get(kernel) ?? { kernel, ms: 0, count: 0 };
    t.ms += Number(s.end - s.begin) / 1e6;
    t.count++;
    totals.set(kernel, t);
  }
  return [...totals.values()].sort((a, b) => b.ms - a.ms);
}
