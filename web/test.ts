/**
 * Drives the built page in Debian's headless Chromium (WebGPU on SwiftShader, the trainer in its
 * Web Worker), one scenario after another in one browser context (so OPFS outlives reloads):
 *
 *   explains:  the task, a rewarded answer (`#### n`), the model, the adapter; empty charts say so;
 *              no request fails (favicon included); Download and exports wait for a trained model
 *   refuses:   GRPO with n = 1 and a negative learning rate, each next to its field, before start
 *   trains:    PPO with a critic and KL loss: pause holds, Stop finishes the step, validates and
 *              keeps a checkpoint; every chart has points (kl_loss too), hover shows values;
 *              metrics JSONL, charts PNG and the model zip download
 *   resumes:   a reload offers the saved run; it resumes at the stopped step and finishes
 *   fails:     a step that throws shows its error and leaves the page usable
 *   byo:       web/test_byo.ts (own model folder, prompts, pasted reward, oversized folder)
 *   calc:      web/test_calc.ts (the calculator task: explanation, two steps, a call shown)
 *   rollout:   web/test_rollout.ts (web/rollout.html joins a distributed run over NATS WebSocket)
 *
 * Screenshots go to dist/web-test/ and are checked for their key elements.
 *
 *   deno run -A web/test.ts [--no-build] [--only explains,trains,...] [--chromium PATH]
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { buildWeb } from "./build.ts";
import {
  checkScreenshot,
  downloadOf,
  Harness,
  pngRows,
  state,
  waitStatus,
  waitStep,
} from "./test_page.ts";
import { checkModelZip, testBringYourOwn } from "./test_byo.ts";
import { testCalculator } from "./test_calc.ts";
import { testRollout } from "./test_rollout.ts";

const ROOT = new URL("../", import.meta.url).pathname;
export const OUT = `${ROOT}dist/web-test`;
const TINY = "tiny=1";

function arg(name: string): string | undefined {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}

async function explains(h: Harness): Promise<void> {
  const page = await h.open(TINY);
  const s = await state(page);
  // The example comes with the worker's first answer to the form's check.
  await page.waitForSelector("#task-explain .example", { timeout: 20_000 });
  const text = await page.locator("#task-explain").innerText();
  assert.match(text, /#### (-?\d+)/, "the explanation shows a rewarded answer");
  assert.match(text, /scores 0/, "the explanation shows a plain answer scoring 0");
  assert.match(await page.locator("#model-info").innerText(), /parameters/);
  assert.ok((await page.locator("#adapter").innerText()).includes(s.adapter), "adapter badge");
  assert.match(await page.locator("#f16").innerText(), /^f16: (yes|no)/);
  assert.equal(await page.locator(".chart.empty").count(), 8, "every chart starts empty");
  assert.match(await page.locator(".chart .empty-note").first().innerText(), /No data yet/);
  for (const id of ["#download", "#export-jsonl", "#export-png"]) {
    assert.ok(await page.locator(id).isDisabled(), `${id} is enabled before any training`);
  }
  assert.match(await page.getAttribute("link[rel=icon]", "href") ?? "", /^data:image\/svg/);
  await checkScreenshot(page, `${OUT}/1-start.png`, [
    "#task-explain",
    "#model-info",
    "#adapter",
    ".chart",
    "#start",
  ]);
  await page.close();
}

async function fieldError(page: Page, field: string): Promise<string> {
  const sel = `.field-error[data-field="${field}"]`;
  await page.waitForSelector(sel, { timeout: 20_000 });
  return await page.locator(sel).innerText();
}

async function refuses(h: Harness): Promise<void> {
  const page = await h.open(`${TINY}&algorithm=grpo`);
  await page.fill("input[name=n]", "1");
  const nMsg = await fieldError(page, "n");
  assert.match(nMsg, /rollout\.n/, nMsg);
  assert.match(nMsg, /2 or more/, nMsg);
  assert.ok(await page.locator("#start").isDisabled(), "Start stays enabled with n = 1");
  await page.fill("input[name=n]", "2");
  await page.fill("input[name=lr]", "-1");
  const lrMsg = await fieldError(page, "lr");
  assert.match(lrMsg, /optim\.lr/, lrMsg);
  assert.equal(await page.locator('.field-error[data-field="n"]').count(), 0, "stale n error");
  await checkScreenshot(page, `${OUT}/2-refused.png`, ['.field-error[data-field="lr"]', "#start"]);
  await page.fill("input[name=lr]", "0.0001");
  await page.waitForFunction(() => document.querySelectorAll(".field-error").length === 0);
  await page.waitForSelector("#start:not([disabled])");
  assert.equal((await state(page)).status, "ready");
  await page.close();
}

async function hoverValue(page: Page, chart: string): Promise<string> {
  const over = page.locator(`.chart[data-title="${chart}"] .u-over`);
  const box = (await over.boundingBox())!;
  await over.hover({ position: { x: box.width - 4, y: box.height / 2 } });
  const value = page.locator(`.chart[data-title="${chart}"] .u-legend .u-value`).nth(1);
  await page.waitForFunction(
    (el) => /\d/.test(el!.textContent ?? ""),
    await value.elementHandle(),
    {
      timeout: 5000,
    },
  ).catch(() => {});
  return await value.innerText();
}

async function trains(h: Harness): Promise<void> {
  // Validation every 5 steps, so the validation at the stopped step comes from Stop. LoRA rank 4
  // on actor and critic: the reference is the actor with adapters off, the checkpoint holds the
  // adapters (resumed below) and the download merges them into a plain model.
  const page = await h.open(
    `${TINY}&algorithm=gae&kl=1&loraRank=4&steps=3&testFreq=5&saveFreq=5`,
  );
  await page.click("#start");
  await page.click("#pause");
  await waitStatus(page, ["paused"], 180);
  assert.match(await page.locator("#status").innerText(), /^paused after step 0/);
  assert.ok(await page.locator("input[name=lr]").isDisabled(), "settings editable mid-run");
  await page.waitForTimeout(1500);
  assert.equal((await state(page)).steps, 0, "a paused run took a step");
  await page.click("#resume");
  await page.waitForFunction(() =>
    !/^paused/.test(document.getElementById("status")!.textContent!)
  );
  await waitStep(page, 1, 240);
  await page.click("#stop");
  assert.match(await page.locator("#status").innerText(), /stopping/);
  await waitStatus(page, ["stopped", "error"], 240);
  const s = await state(page);
  assert.equal(s.status, "stopped", `run ended with ${s.status}: ${s.error}`);
  const last = s.metrics.at(-1)!;
  assert.equal(last.step, s.steps);
  assert.ok(s.steps >= 1 && s.steps < 3, `stopped at step ${s.steps}`);
  assert.ok(Object.keys(last.metrics).some((k) => k.startsWith("val-core/")), "no validation");
  assert.ok(s.saved && s.saved.step === s.steps, "Stop kept no checkpoint");
  assert.match(await page.locator("#status").innerText(), /^stopped at step/);
  for (const [title, series] of Object.entries(s.chartPoints)) {
    for (const [label, n] of Object.entries(series)) {
      assert.ok(n > 0, `chart "${title}" has no ${label} points`);
    }
  }
  for (const m of s.metrics.filter((m) => m.step > 0)) {
    for (const k of ["actor/kl_loss", "critic/vf_loss", "actor/grad_norm", "perf/throughput"]) {
      assert.ok(Number.isFinite(m.metrics[k]), `step ${m.step}: ${k} = ${m.metrics[k]}`);
    }
  }
  const hovered = await hoverValue(page, "Reward");
  assert.match(hovered, /^-?\d/, `hover shows no value: ${JSON.stringify(hovered)}`);
  assert.ok(!(await page.locator("#download").isDisabled()), "Download disabled after Stop");
  const jsonl = new TextDecoder().decode(
    await downloadOf(page, "#export-jsonl", `${OUT}/metrics.jsonl`),
  );
  const lines = jsonl.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.step), s.metrics.map((m) => m.step));
  const png = pngRows(await downloadOf(page, "#export-png", `${OUT}/charts.png`));
  assert.ok(png.width > 400 && png.height > 400, `charts.png is ${png.width}x${png.height}`);
  assert.ok(new Set(png.rows.flatMap((r) => [...r.subarray(0, 400)])).size > 16, "blank PNG");
  await checkModelZip(
    await downloadOf(page, "#download", `${OUT}/trained.zip`),
    { dtype: "F32", prefix: "built-in_tiny_arith-trained" },
  );
  await checkScreenshot(page, `${OUT}/3-stopped.png`, [
    "#status",
    "#task-explain",
    '.chart[data-title="KL"] .u-over',
    '.chart[data-title="Validation accuracy"] .u-over',
    "#samples tbody tr",
    "#download",
  ]);
  await page.close();
  console.log(`trains: stopped at step ${s.steps}, ${s.metrics.length} records`);
}

async function resumes(h: Harness): Promise<void> {
  const page = await h.open(TINY);
  await page.waitForSelector("#saved-run:not([hidden])", { timeout: 30_000 });
  const saved = (await state(page)).saved!;
  assert.match(await page.locator("#saved-text").innerText(), /step \d+ of 3/);
  await page.click("#resume-saved");
  await waitStatus(page, ["done", "error"], 300);
  const s = await state(page);
  assert.equal(s.status, "done", `resumed run ended with ${s.status}: ${s.error}`);
  assert.equal(s.steps, 3);
  const steps = s.metrics.map((m) => m.step);
  assert.deepEqual(steps, [...new Set(steps)], `a step was logged twice: ${steps}`);
  const expected = Array.from({ length: 3 - saved.step }, (_, i) => saved.step + 1 + i);
  assert.deepEqual(steps.filter((x) => x > saved.step), expected, `steps after resume: ${steps}`);
  assert.ok(steps.includes(saved.step), "the resumed run lost the saved metrics");
  assert.ok(
    await page.locator("input[name=useKlLoss]").isChecked(),
    "the form shows the resumed run's settings",
  );
  assert.equal(await page.inputValue("input[name=steps]"), "3");
  assert.equal(await page.inputValue("input[name=loraRank]"), "4");
  await page.close();
  console.log(`resumes: from step ${saved.step} to 3`);
}

async function fails(h: Harness): Promise<void> {
  const page = await h.open(`${TINY}&steps=3&fail_at_step=2`);
  await page.click("#start");
  await waitStatus(page, ["error", "done"], 240);
  const s = await state(page);
  assert.equal(s.status, "error");
  assert.match(s.error ?? "", /step 2 failed/);
  assert.match(await page.locator("#error-line").innerText(), /step 2 failed/);
  assert.ok(!(await page.locator("#start").isDisabled()), "Start disabled after a failure");
  assert.ok(!(await page.locator("input[name=lr]").isDisabled()), "form locked after a failure");
  // The step-1 checkpoint is still there to download.
  assert.ok(!(await page.locator("#download").isDisabled()), "no checkpoint to download");
  await page.fill("input[name=n]", "1");
  await fieldError(page, "n");
  await page.close();
}

const SCENARIOS: Record<string, (h: Harness) => Promise<void>> = {
  explains,
  refuses,
  trains,
  resumes,
  fails,
  byo: (h) => testBringYourOwn(h, OUT),
  calc: (h) => testCalculator(h, OUT),
  rollout: (h) => testRollout(h, OUT),
};

export async function runPageTest(o: { build: boolean; only?: string[]; chromium?: string }) {
  const t0 = performance.now();
  if (o.build) await buildWeb({ quiet: true });
  await Deno.mkdir(OUT, { recursive: true });
  const h = await Harness.start({ chromium: o.chromium });
  try {
    for (const [name, scenario] of Object.entries(SCENARIOS)) {
      if (o.only && !o.only.includes(name)) continue;
      const t = performance.now();
      await scenario(h);
      console.log(`ok ${name} (${((performance.now() - t) / 1000).toFixed(1)} s)`);
    }
    assert.deepEqual(h.foreign, [], "requests left the page's origin");
    assert.deepEqual(h.failed, [], "requests failed");
    assert.deepEqual(h.pageErrors, [], "the page logged errors");
  } finally {
    await h.close();
  }
  console.log(`web test: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

if (import.meta.main) {
  await runPageTest({
    build: !Deno.args.includes("--no-build"),
    only: arg("--only")?.split(","),
    chromium: arg("--chromium") ?? Deno.env.get("CHROMIUM"),
  });
}
