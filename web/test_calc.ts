/**
 * The calculator scenario of web/test.ts: the Task picker's calculator task explains itself (a
 * call, the tool's reply, `#### n`) and starts from its own model; two GRPO steps of multi-turn
 * rollouts give finite metrics, and the answers table shows a sampled conversation, turn by turn
 * with roles, in which the model called the calculator and read its reply. A saved run's banner
 * gives way while the calculator run (which saves nothing) trains, and comes back after it.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { checkScreenshot, type Harness, state, waitStatus } from "./test_page.ts";

const BANNER = "#saved-run";

/** Leaves a saved run in OPFS (the earlier scenarios do; run alone, a one-step run makes one). */
async function ensureSavedRun(h: Harness): Promise<void> {
  const page = await h.open("tiny=1&steps=1");
  if ((await state(page)).saved === null) {
    await page.click("#start");
    await waitStatus(page, ["done", "error"], 120);
    assert.equal((await state(page)).status, "done", (await state(page)).error ?? "");
  }
  await page.close();
}

async function bannerShown(page: Page): Promise<boolean> {
  return await page.locator(BANNER).isVisible();
}

export async function testCalculator(h: Harness, out: string): Promise<void> {
  // The picker brings the calculator task's settings (configs/tasks/calc_tool.yaml, shrunk by
  // tiny=1); then 2 prompts x 8 conversations per step, so the starting model (which calls the
  // calculator in about a third of its sampled conversations) shows some calls.
  await ensureSavedRun(h);
  const page = await h.open("tiny=1");
  await page.waitForSelector(`${BANNER}:not([hidden])`, { timeout: 30_000 });
  assert.match(await page.locator("#model-info").innerText(), /tiny_arith/);
  await page.selectOption("select[name=taskName]", "calc_tool");
  await page.waitForFunction(() =>
    /a rewarded conversation/.test(document.getElementById("task-explain")!.textContent!)
  );
  assert.equal(await page.inputValue("input[name=lr]"), "0.001");
  assert.equal(await page.inputValue("input[name=maxResponseLength]"), "32");
  assert.equal(await page.inputValue("select[name=reward]"), "auto");
  const text = await page.locator("#task-explain").innerText();
  assert.match(text, /calculator/, text);
  assert.match(text, /assistant: <tool_call>\{"name": "calculator"/, text);
  assert.match(text, /tool: (\d+)\nassistant: #### \1/, text);
  assert.match(await page.locator("#model-info").innerText(), /tiny_calc/);
  assert.ok(await page.locator("#arithmetic-knobs").isHidden(), "arithmetic knobs shown");
  // Back and forth: the arithmetic task brings its model, knobs and settings back.
  await page.selectOption("select[name=taskName]", "arithmetic");
  await page.waitForFunction(() =>
    /tiny_arith/.test(document.getElementById("model-info")!.textContent!)
  );
  assert.ok(await page.locator("#arithmetic-knobs").isVisible(), "arithmetic knobs hidden");
  assert.equal(await page.inputValue("input[name=maxResponseLength]"), "10");
  await page.selectOption("select[name=taskName]", "calc_tool");
  await page.waitForFunction(() =>
    /tiny_calc/.test(document.getElementById("model-info")!.textContent!)
  );
  await page.fill("input[name=steps]", "2");
  await page.fill("input[name=n]", "8");
  await page.fill("input[name=saveFreq]", "-1");
  await page.waitForSelector("#start:not([disabled])");
  await page.click("#start");
  assert.ok(!(await bannerShown(page)), "the saved run's banner stays once Start is clicked");
  await waitStatus(page, ["running", "done", "error"], 60);
  assert.equal((await state(page)).status, "running");
  assert.ok(!(await bannerShown(page)), "the saved run's banner stays over the new run");
  await checkScreenshot(page, `${out}/5-calculator-running.png`, ["#status", "#step-line"]);
  await waitStatus(page, ["done", "error"], 120);
  const s = await state(page);
  assert.equal(s.status, "done", `calculator run ended with ${s.status}: ${s.error}`);
  // The run saved nothing, so the earlier saved run is still there to resume.
  await page.waitForSelector(`${BANNER}:not([hidden])`, { timeout: 10_000 });
  for (const m of s.metrics.filter((m) => m.step > 0)) {
    for (const k of ["actor/pg_loss", "actor/grad_norm", "critic/score/mean", "num_turns/mean"]) {
      assert.ok(Number.isFinite(m.metrics[k]), `step ${m.step}: ${k} = ${m.metrics[k]}`);
    }
  }
  // A sampled conversation that called the calculator and got its reply, shown with roles.
  const calls = page.locator("#samples tr").filter({
    has: page.locator(".turn.assistant", { hasText: '<tool_call>{"name": "calculator"' }),
  }).filter({ has: page.locator(".turn.tool") });
  const shown = await calls.count();
  assert.ok(shown > 0, "no sample shows a calculator call and its reply");
  const turns = await calls.first().locator(".turn").allInnerTexts();
  const reply = turns.findIndex((t) => /^tool\s*-?\d+(\.\d+)?$/.test(t));
  assert.ok(reply > 0 && /^assistant\s*<tool_call>/.test(turns[reply - 1]), turns.join(" | "));
  await checkScreenshot(page, `${out}/5-calculator.png`, [
    "#task-explain",
    "#samples td.conversation",
  ]);
  await page.close();
  const steps = s.metrics.filter((m) => m.step > 0);
  console.log(
    `calc: ${shown} shown calls with replies; num_turns/mean ${
      steps.map((m) => m.metrics["num_turns/mean"].toFixed(2)).join(", ")
    }`,
  );
}
