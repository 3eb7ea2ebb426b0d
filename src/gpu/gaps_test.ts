import assert from "node:assert/strict";
import { gpuTest } from "../testing/mod.ts";
import { gpuGaps, kernelTotals } from "./gaps.ts";
import { gpu } from "./device.ts";
import { packParams } from "./params.ts";
import type { KernelSpan } from "./recorder.ts";

/** A span from ms figures (the clock starts far from zero, as a GPU's does). */
const span = (kernel: string, beginMs: number, endMs: number): KernelSpan => ({
  kernel,
  begin: 10n ** 15n + BigInt(beginMs * 1e6),
  end: 10n ** 15n + BigInt(endMs * 1e6),
});

Deno.test("gpuGaps: busy time is the union of the spans; gaps name their neighbours", () => {
  // a [0, 4], b [2, 5] overlaps a, c [5, 6] touches b, gap 6 -> 9, d [9, 10], gap 10 -> 10.5, e.
  const spans = [
    span("d", 9, 10),
    span("a", 0, 4),
    span("b", 2, 5),
    span("c", 5, 6),
    span("e", 10.5, 12),
    span("inside", 9.2, 9.8),
  ];
  const all = gpuGaps(spans);
  assert.equal(all.spanMs, 12);
  assert.equal(all.busyMs, 6 + 1 + 1.5);
  assert.deepEqual(all.gaps, [
    { atMs: 6, ms: 3, before: "c", after: "d" },
    { atMs: 10, ms: 0.5, before: "d", after: "e" },
  ]);
  const tail = gpuGaps(spans, { lastMs: 3.5 });
  assert.equal(tail.windowMs, 3.5);
  assert.equal(tail.windowBusyMs, 1 + 1.5, "from 8.5 ms: d and e");
  assert.deepEqual(tail.gaps.map((g) => g.atMs), [10], "the gap that began before 8.5 is left out");
  assert.deepEqual(gpuGaps(spans, { minGapMs: 1 }).gaps.map((g) => g.before), ["c"]);
  assert.deepEqual(gpuGaps(spans, { top: 1 }).gaps.length, 1);
  assert.deepEqual(gpuGaps([]), { spanMs: 0, busyMs: 0, windowMs: 0, windowBusyMs: 0, gaps: [] });
});

Deno.test("kernelTotals: per-kernel time of the dispatches that begin in the window", () => {
  const spans = [span("mm", 0, 4), span("norm", 4, 5), span("mm", 6, 9), span("norm", 9, 9.5)];
  assert.deepEqual(kernelTotals(spans), [
    { kernel: "mm", ms: 7, count: 2 },
    { kernel: "norm", ms: 1.5, count: 2 },
  ]);
  // The last 4 ms begin at 5.5: the first mm and norm are left out.
  assert.deepEqual(kernelTotals(spans, { lastMs: 4 }), [
    { kernel: "mm", ms: 3, count: 1 },
    { kernel: "norm", ms: 0.5, count: 1 },
  ]);
  assert.deepEqual(kernelTotals([]), []);
  const gridded = [{ ...spans[0], grid: "2x1x1" }, { ...spans[2], grid: "4x1x1" }, spans[1]];
  assert.deepEqual(kernelTotals(gridded, { byGrid: true }), [
    { kernel: "mm @ 2x1x1", ms: 4, count: 1 },
    { kernel: "mm @ 4x1x1", ms: 3, count: 1 },
    { kernel: "norm @ ?", ms: 1, count: 1 },
  ]);
});

gpuTest("profile fills spans: one per dispatch, labelled with its grid, begin <= end", async () => {
  const g = gpu();
  const buffer = g.device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE });
  const spans: KernelSpan[] = [];
  try {
    await g.profile(async () => {
      for (let i = 0; i < 3; i++) {
        g.dispatch({ shader: "basic", entry: "fill", defines: { WG: 64 } }, {
          params: packParams([64, { f32: i }]),
          buffers: [buffer],
          workgroups: [1],
        });
      }
      await g.sync();
    }, { spans });
  } finally {
    buffer.destroy();
  }
  assert.equal(spans.length, 3);
  for (const s of spans) {
    assert.match(s.kernel, /^basic:fill/);
    assert.equal(s.grid, "1x1x1");
    assert.ok(s.begin <= s.end);
  }
  const r = gpuGaps(spans);
  assert.ok(r.busyMs > 0 && r.busyMs <= r.spanMs + 1e-9);
}, { timestamps: true });
