import assert from "node:assert/strict";
import { TensorBoardWriter } from "../tensorboard.ts";
import { type Chart, renderChart, stackUp } from "./chart.ts";
import { reportCharts } from "./charts.ts";
import { readEventFile } from "./events.ts";
import { MetricsNotFound, parseJsonl, readRunMetrics } from "./metrics.ts";
import { writeRunReport } from "./report.ts";
import { formatTick, niceTicks } from "./scale.ts";

const VOID = new Set(["meta", "link", "br", "hr", "img", "input"]);

/** Checks that every tag is closed in order; returns the count of each element. */
export function checkTags(doc: string): Map<string, number> {
  const stack: string[] = [];
  const counts = new Map<string, number>();
  const body = doc.replace(/<!DOCTYPE[^>]*>/i, "").replace(/<!--[\s\S]*?-->/g, "");
  for (const m of body.matchAll(/<(\/?)([a-zA-Z][\w:-]*)((?:[^>"]|"[^"]*")*?)(\/?)>/g)) {
    const [, close, name, , self] = m;
    if (close) {
      assert.equal(stack.pop(), name, `</${name}> closes the wrong element`);
    } else {
      counts.set(name, (counts.get(name) ?? 0) + 1);
      if (!self && !VOID.has(name)) stack.push(name);
    }
  }
  assert.deepEqual(stack, [], "unclosed elements");
  assert.ok(!/<(?![a-zA-Z/!])/.test(body.replace(/<[^>]*>/g, "")), "stray < in text");
  return counts;
}

function line(step: number, data: Record<string, number | null>): string {
  return JSON.stringify({ step, data });
}

function sample(steps: number): string {
  const out = [line(0, { "val-core/arith/reward/mean@1": 0.4 })];
  for (let s = 1; s <= steps; s++) {
    const d: Record<string, number> = {
      "critic/score/mean": s / steps,
      "critic/score/min": 0,
      "critic/score/max": 1,
      "actor/ppo_kl": 0.001 * s,
      "actor/entropy": 1 / s,
      "response_length/mean": 5 + s,
      "timing_s/gen": 1,
      "timing_s/update_actor": 2,
      "timing_s/step": 3.1,
    };
    if (s % 5 === 0) d["val-core/arith/reward/mean@1"] = 0.4 + s / 100;
    if (s % 5 === 0) d["val-core/gsm8k/reward/mean@1"] = 0.1;
    out.push(line(s, d));
  }
  return out.join("\n") + "\n";
}

Deno.test("jsonl: the last record of a repeated step wins, null and a torn last line are left out", () => {
  const text = [
    line(1, { a: 1, b: 2 }),
    line(2, { a: 5 }),
    line(2, { a: 6, b: null }), // a resumed run logs step 2 again
    line(3, { a: 7 }),
    `{"step": 4, "da`,
  ].join("\n");
  const run = parseJsonl(text, "x/metrics.jsonl");
  assert.deepEqual(run.series.get("a"), [[1, 1], [2, 6], [3, 7]]);
  assert.deepEqual(run.series.get("b"), [[1, 2]]);
  assert.deepEqual(run.steps, [1, 2, 3]);
  assert.equal(run.notes.length, 2);
  assert.throws(
    () => parseJsonl(`nope\n${line(1, { a: 1 })}\n`, "r/m.jsonl"),
    /r\/m\.jsonl:1: not JSON/,
  );
  assert.throws(() => parseJsonl(`{"data": {}}\n`, "r/m.jsonl"), /r\/m\.jsonl:1: expected/);
  assert.throws(() => parseJsonl("\n", "r/m.jsonl"), /r\/m\.jsonl: holds no metrics/);
});

Deno.test("tensorboard: event files written by our writer read back; jsonl preferred when both exist", async () => {
  const dir = await Deno.makeTempDir({ prefix: "report_tb_" });
  const w1 = new TensorBoardWriter(`${dir}/tensorboard`);
  w1.log(1, { "critic/score/mean": 0.25, "actor/pg_loss": -0.5 });
  w1.log(2, { "critic/score/mean": 0.5 });
  w1.close();
  const first = readEventFile(w1.path, await Deno.readFile(w1.path));
  assert.deepEqual(first.map((s) => [s.step, s.tag, s.value]), [
    [1, "critic/score/mean", 0.25],
    [1, "actor/pg_loss", -0.5],
    [2, "critic/score/mean", 0.5],
  ]);
  // A resumed run: a second file, later in name order, logs step 2 again.
  const second = `${dir}/tensorboard/events.out.tfevents.9999999999.host`;
  const w2 = new TensorBoardWriter(`${dir}/tb2`);
  w2.log(2, { "critic/score/mean": 0.75 });
  w2.log(3, { "critic/score/mean": 1 });
  w2.close();
  const bytes = await Deno.readFile(w2.path);
  // Torn tail: a run killed in the middle of a write.
  await Deno.writeFile(second, Uint8Array.from([...bytes, ...bytes.subarray(0, 20)]));
  const run = await readRunMetrics(dir);
  assert.equal(run.format, "tensorboard");
  assert.deepEqual(run.series.get("critic/score/mean"), [[1, 0.25], [2, 0.75], [3, 1]]);
  assert.deepEqual(run.series.get("actor/pg_loss"), [[1, -0.5]]);
  const corrupt = Uint8Array.from(bytes);
  corrupt[20] ^= 0xff;
  assert.throws(
    () => readEventFile("e.tfevents", corrupt),
    /e\.tfevents: event file: bad payload checksum/,
  );

  await Deno.writeTextFile(`${dir}/metrics.jsonl`, line(1, { "critic/score/mean": 0.1 }) + "\n");
  const both = await readRunMetrics(`${dir}/`);
  assert.equal(both.format, "jsonl");
  assert.equal(both.source, `${dir}/metrics.jsonl`);
  assert.equal((await readRunMetrics(`${dir}/tensorboard`)).format, "tensorboard");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("readRunMetrics names the path and what is missing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "report_missing_" });
  await assert.rejects(() => readRunMetrics(`${dir}/nope`), (e: Error) => {
    assert.ok(e instanceof MetricsNotFound);
    assert.match(e.message, new RegExp(`${dir}/nope: no such file or folder`));
    return true;
  });
  await assert.rejects(() => readRunMetrics(dir), /no metrics\.jsonl and no tensorboard\//);
  await Deno.mkdir(`${dir}/tensorboard`);
  await assert.rejects(() => readRunMetrics(dir), /tensorboard: no event files/);
  assert.equal(await writeRunReport(`${dir}/nope`, { missingOk: true }), undefined);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("ticks are round numbers covering the range, labels are short", () => {
  assert.deepEqual(niceTicks(0, 1), [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(niceTicks(0.03, 0.19, 5), [0, 0.05, 0.1, 0.15, 0.2]);
  assert.deepEqual(niceTicks(1, 3, 8, true), [1, 2, 3]);
  assert.deepEqual(niceTicks(0, 0), [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.equal(formatTick(0.30000000000000004, 0.1), "0.3");
  assert.equal(formatTick(2500, 500), "2500");
  assert.equal(formatTick(25000, 5000), "25k");
  assert.equal(formatTick(1.5e-4, 5e-5), "1.5e-4");
  assert.deepEqual(stackUp([{ points: [[1, 1], [2, 1]] }, { points: [[2, 2], [3, 1]] }]), [
    [[1, 1], [2, 1], [3, 0]],
    [[1, 1], [2, 3], [3, 1]],
  ]);
});

Deno.test("charts: well-formed SVG with titles, axes, legend and one path point per step", () => {
  const run = parseJsonl(sample(20), "run/metrics.jsonl");
  const charts = reportCharts(run);
  const ids = charts.map((c) => c.id);
  for (const id of ["reward", "validation", "kl", "entropy", "response_length", "clip_ratio"]) {
    assert.ok(ids.includes(id), id);
  }
  for (const id of ["pg_loss", "grad_norm", "throughput", "timing"]) assert.ok(ids.includes(id));
  for (const chart of charts) {
    const svg = renderChart(chart);
    assert.ok(!/NaN|Infinity|undefined/.test(svg), `${chart.id}: no NaN`);
    const tags = checkTags(svg);
    assert.equal(tags.get("svg"), 1);
    assert.ok(svg.includes(`>${chart.title}</text>`), `${chart.id}: title`);
  }
  const reward = renderChart(charts.find((c) => c.id === "reward")!);
  const paths = [
    ...reward.matchAll(/class="line" data-label="([^"]*)" data-points="(\d+)" d="([^"]*)"/g),
  ];
  assert.deepEqual(paths.map((m) => [m[1], Number(m[2])]), [
    ["critic/score/mean", 20],
    ["val arith/reward/mean@1", 5],
    ["val gsm8k/reward/mean@1", 4],
  ]);
  for (const m of paths) assert.equal(m[3].split("L").length, Number(m[2]));
  assert.equal((reward.match(/<circle /g) ?? []).length, 9, "markers on the validation lines");
  assert.equal((reward.match(/class="band"/g) ?? []).length, 1);
  assert.ok((reward.match(/class="ytick"/g) ?? []).length >= 3);
  assert.ok((reward.match(/class="xtick"/g) ?? []).length >= 3);
  assert.ok(reward.includes(">step</text>") && reward.includes(">score</text>"));
  assert.equal((reward.match(/class="legend"/g) ?? []).length, 4);
  const timing = renderChart(charts.find((c) => c.id === "timing")!);
  assert.equal((timing.match(/class="area"/g) ?? []).length, 2);
  assert.ok(timing.indexOf("timing_s/gen") < timing.indexOf("timing_s/update_actor"));
});

Deno.test("a chart without data says so and draws no axis", () => {
  const run = parseJsonl(line(1, { "actor/entropy": 0.5 }) + "\n", "m.jsonl");
  const kl = reportCharts(run).find((c) => c.id === "kl")!;
  const svg = renderChart(kl);
  checkTags(svg);
  assert.match(svg, /no data: this run logged none of actor\/ppo_kl/);
  assert.ok(!/tick|<path|<line/.test(svg));
  const one: Chart = { id: "x", title: "One & <two>", yLabel: "v", lines: [], empty: "" };
  one.lines.push({ label: "a<b", points: [[3, 7]] });
  const single = renderChart(one);
  checkTags(single);
  assert.ok(single.includes("One &amp; &lt;two&gt;") && !/NaN/.test(single));
  assert.equal((single.match(/<circle /g) ?? []).length, 1);
});

Deno.test("writeRunReport writes one SVG per chart and a self-contained HTML page", async () => {
  const dir = await Deno.makeTempDir({ prefix: "report_html_" });
  await Deno.writeTextFile(`${dir}/metrics.jsonl`, sample(12));
  const rep = await writeRunReport(`${dir}/metrics.jsonl`);
  assert.equal(rep.html, `${dir}/report.html`);
  assert.equal(rep.svg.length, reportCharts(rep.metrics).length);
  assert.ok(rep.svg.includes(`${dir}/plots/reward.svg`));
  for (const f of rep.svg) checkTags(await Deno.readTextFile(f));
  const html = await Deno.readTextFile(rep.html);
  const tags = checkTags(html);
  assert.equal(tags.get("svg"), rep.svg.length, "every chart inline");
  assert.equal(tags.get("script"), undefined);
  assert.ok(!/(src|href)=|@import|url\(/.test(html), "nothing fetched");
  assert.ok(html.includes("Reward and validation accuracy") && html.includes("Time per step"));
  assert.ok(html.includes("val-core/arith/reward/mean@1"));
  const other = await writeRunReport(dir, { outDir: `${dir}/elsewhere` });
  assert.equal(other.html, `${dir}/elsewhere/report.html`);
  await Deno.remove(dir, { recursive: true });
});
