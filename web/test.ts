/**
 * Drives the built page in Debian's headless Chromium (WebGPU on SwiftShader): a short training
 * run must finish with finite metrics, points on the charts and rows in the samples table, and no
 * request may leave the page's own origin. Saves a screenshot to dist/web-test/screenshot.png.
 *
 *   deno run -A web/test.ts [--no-build] [--steps 2] [--algorithm grpo|gae] [--timeout 1200]
 *     [--chromium PATH]
 */
import assert from "node:assert/strict";
import { chromium, type Page } from "playwright-core";
import { unzipSync } from "fflate";
import { buildWeb } from "./build.ts";
import { serveStatic } from "./serve.ts";

const ROOT = new URL("../", import.meta.url).pathname;

const CHROMIUM_ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--enable-unsafe-webgpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

function arg(name: string): string | undefined {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}

function findChromium(): string {
  const given = arg("--chromium") ?? Deno.env.get("CHROMIUM");
  for (const p of [given, "/usr/lib/chromium/chromium", "/usr/bin/chromium"]) {
    try {
      if (p && Deno.statSync(p).isFile) return p;
    } catch {
      // not there; try the next
    }
  }
  throw new Error("Chromium not found: apt-get install -y chromium (or pass --chromium PATH)");
}

interface PageState {
  status: string;
  error: string | null;
  adapter: string;
  f16: boolean;
  steps: number;
  metrics: { step: number; metrics: Record<string, number> }[];
  samples: number;
  /** Where the page's model came from. */
  model: string;
}

/** The page's `globalThis.webrl`. */
type Win = { webrl?: PageState & { chartPoints(): Record<string, number> } };

/** Metrics every finished step must carry, finite. */
const STEP_METRICS = [
  "critic/score/mean",
  "actor/entropy",
  "actor/ppo_kl",
  "actor/pg_loss",
  "response_length/mean",
  "perf/throughput",
];

export async function runPageTest(
  options: { steps: number; timeoutS: number; build: boolean; algorithm?: "grpo" | "gae" },
) {
  if (options.build) await buildWeb({ quiet: true });
  const outDir = `${ROOT}dist/web-test`;
  await Deno.mkdir(outDir, { recursive: true });
  let origin = "";
  const server = serveStatic({ port: 0, onListen: (url) => (origin = new URL(url).origin) });
  await new Promise((r) => setTimeout(r, 50));
  const browser = await chromium.launch({ executablePath: findChromium(), args: CHROMIUM_ARGS });
  const foreign: string[] = [];
  const pageErrors: string[] = [];
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    // Every request goes through here: anything not from the page's own origin fails the test.
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(`${origin}/`) || url.startsWith("data:") || url.startsWith("blob:")) {
        return route.continue();
      }
      foreign.push(url);
      return route.abort("blockedbyclient");
    });
    const page = await context.newPage();
    page.on("pageerror", (e) => pageErrors.push(e.message));
    page.on("websocket", (ws) => foreign.push(ws.url()));
    page.on("console", (m) => {
      if (m.type() === "error") pageErrors.push(m.text());
      console.log(`[page] ${m.text()}`);
    });
    await page.goto(
      `${origin}/?steps=${options.steps}&tiny=1&algorithm=${options.algorithm ?? "grpo"}`,
    );
    await page.waitForFunction(
      () =>
        ["ready", "error", "no-webgpu"].includes(
          (globalThis as unknown as Win).webrl?.status ?? "",
        ),
      null,
      { timeout: 120_000 },
    );
    const ready = await page.evaluate(() =>
      JSON.parse(JSON.stringify((globalThis as unknown as Win).webrl)) as PageState
    );
    assert.equal(ready.status, "ready", `page not ready: ${ready.status} ${ready.error ?? ""}`);
    console.log(`adapter: ${ready.adapter}; f16: ${ready.f16}`);
    const t0 = performance.now();
    await page.click("#start");
    // Paused right away, the run validates the starting model (step 0) and then must hold.
    await page.click("#pause");
    await page.waitForFunction(
      () => ((globalThis as unknown as Win).webrl?.metrics.length ?? 0) > 0,
      null,
      { timeout: options.timeoutS * 1000, polling: 500 },
    );
    await page.waitForTimeout(2000);
    const held = await page.evaluate(() => (globalThis as unknown as Win).webrl!.steps);
    assert.equal(held, 0, "a paused run took a step");
    await page.click("#resume");
    await page.waitForFunction(
      () => ["done", "error"].includes((globalThis as unknown as Win).webrl?.status ?? ""),
      null,
      { timeout: options.timeoutS * 1000, polling: 1000 },
    );
    const seconds = (performance.now() - t0) / 1000;
    const s = await page.evaluate(() => {
      const w = (globalThis as unknown as Win).webrl!;
      return { ...w, chartPoints: w.chartPoints() };
    });
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${outDir}/screenshot.png`, fullPage: true });
    console.log(
      `run: ${s.status} after ${seconds.toFixed(1)} s; charts ${JSON.stringify(s.chartPoints)}`,
    );
    assert.equal(s.status, "done", `run ended with ${s.status}: ${s.error}`);
    assert.equal(s.steps, options.steps, "every step completed");
    const stepLogs = s.metrics.filter((m) => m.step > 0);
    assert.equal(stepLogs.length, options.steps);
    for (const { step, metrics } of stepLogs) {
      for (const key of STEP_METRICS) {
        assert.ok(Number.isFinite(metrics[key]), `step ${step}: ${key} = ${metrics[key]}`);
      }
    }
    const val = Object.keys(s.metrics.at(-1)!.metrics).filter((k) => k.startsWith("val-core/"));
    assert.ok(val.length > 0, "the last step validated");
    for (const [title, n] of Object.entries(s.chartPoints)) {
      assert.ok(n > 0, `chart "${title}" has no points`);
    }
    assert.ok(s.samples > 0, "the samples table has rows");
    await checkDownloadAndUpload(page, outDir);
    assert.deepEqual(foreign, [], "requests left the page's origin");
    assert.deepEqual(pageErrors, [], "the page logged errors");
    console.log(`ok: ${options.steps} steps in ${seconds.toFixed(1)} s on "${s.adapter}"`);
  } finally {
    await browser.close();
    await server.shutdown();
  }
}

/** The trained model downloads as an HF folder zip, and that folder loads back into the page. */
async function checkDownloadAndUpload(page: Page, outDir: string): Promise<void> {
  const [dl] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
  const zipPath = `${outDir}/webrl-model.zip`;
  await dl.saveAs(zipPath);
  const files = unzipSync(await Deno.readFile(zipPath));
  for (const f of ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]) {
    assert.ok(files[`webrl-model/${f}`]?.byteLength > 0, `the zip lacks webrl-model/${f}`);
  }
  const dir = `${outDir}/webrl-model`;
  await Deno.mkdir(dir, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) {
    await Deno.writeFile(`${outDir}/${name}`, bytes);
  }
  await page.setInputFiles("#upload", dir);
  await page.waitForFunction(
    () => /^webrl-model\//.test((globalThis as unknown as Win).webrl?.model ?? ""),
    null,
    { timeout: 60_000 },
  );
  console.log(`download: ${Object.keys(files).length} files; uploaded back`);
}

if (import.meta.main) {
  await runPageTest({
    steps: Number(arg("--steps") ?? 2),
    timeoutS: Number(arg("--timeout") ?? 1200),
    build: !Deno.args.includes("--no-build"),
    algorithm: arg("--algorithm") === "gae" ? "gae" : "grpo",
  });
}
