import assert from "node:assert/strict";
import { main, parsePlotArgs } from "./plot.ts";

const quiet = () => {};
const script = new URL("./plot.ts", import.meta.url).pathname;

function metrics(): string {
  return [1, 2, 3].map((s) =>
    JSON.stringify({
      step: s,
      data: { "critic/score/mean": s / 4, "val-core/a/reward/mean@1": s / 5 },
    })
  ).join("\n") + "\n";
}

Deno.test("plot: run folder or metrics.jsonl in, report and charts out, --svg copies a chart", async () => {
  const dir = await Deno.makeTempDir({ prefix: "plot_test_" });
  await Deno.writeTextFile(`${dir}/metrics.jsonl`, metrics());
  const lines: string[] = [];
  const rep = await main([dir, "--svg", `reward=${dir}/docs/run.svg`], (l) => lines.push(l));
  assert.equal(rep.html, `${dir}/report.html`);
  assert.ok(lines.some((l) => l === `report: ${dir}/report.html`));
  assert.equal(await Deno.readTextFile(`${dir}/docs/run.svg`), rep.charts.get("reward"));
  const again = await main([`${dir}/metrics.jsonl`, `--out=${dir}/o`], quiet);
  assert.equal(again.html, `${dir}/o/report.html`);
  await assert.rejects(() => main([dir, "--svg", `nope=${dir}/x.svg`], quiet), /no chart "nope"/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("plot: arguments are checked", () => {
  assert.throws(() => parsePlotArgs([]), /expected one run folder/);
  assert.throws(() => parsePlotArgs(["a", "b"]), /got 2/);
  assert.throws(() => parsePlotArgs(["a", "--svg", "reward"]), /expected CHART=FILE/);
  assert.throws(() => parsePlotArgs(["a", "--bogus"]), /unknown option --bogus/);
  assert.deepEqual(parsePlotArgs(["a", "--out", "o"]), { path: "a", outDir: "o", copies: [] });
});

Deno.test("plot on a missing folder exits non-zero naming it", async () => {
  const missing = `${await Deno.makeTempDir({ prefix: "plot_missing_" })}/no_such_run`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, missing],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 1, err);
  assert.equal(err.trim(), `plot: ${missing}: no such file or folder`);
  await Deno.remove(missing.replace(/\/no_such_run$/, ""), { recursive: true });
});
