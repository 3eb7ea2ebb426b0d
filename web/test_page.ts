/**
 * What web/test.ts drives the page with: the built page served on localhost, Debian's Chromium
 * through playwright-core (WebGPU on SwiftShader), the page's `globalThis.webrl` state, and a
 * screenshot check that decodes the PNG and asks whether each key element's region holds a
 * drawing rather than a blank.
 */
import assert from "node:assert/strict";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { unzlibSync } from "fflate";
import { serveStatic } from "./serve.ts";

export const CHROMIUM_ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--enable-unsafe-webgpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

export function findChromium(given?: string): string {
  for (const p of [given, "/usr/lib/chromium/chromium", "/usr/bin/chromium"]) {
    try {
      if (p && Deno.statSync(p).isFile) return p;
    } catch {
      // not there; try the next
    }
  }
  throw new Error("Chromium not found: apt-get install -y chromium (or pass --chromium PATH)");
}

/** The page's `globalThis.webrl`, as JSON. */
export interface PageState {
  status: string;
  error: string | null;
  adapter: string;
  f16: boolean;
  steps: number;
  totalSteps: number;
  metrics: { step: number; metrics: Record<string, number> }[];
  samples: number;
  model: string;
  data: string;
  fieldErrors: { field: string; key: string; message: string }[];
  saved: { step: number; totalSteps: number } | null;
  trained: boolean;
  downloads: string[];
  chartPoints: Record<string, Record<string, number>>;
}

type Win = { webrl?: Omit<PageState, "chartPoints"> & { chartPoints(): PageState["chartPoints"] } };

/** The browser, the server and every problem the pages report. */
export class Harness {
  readonly foreign: string[] = [];
  readonly pageErrors: string[] = [];
  /** Responses with status >= 400 (a missing favicon would land here). */
  readonly failed: string[] = [];

  private constructor(
    readonly browser: Browser,
    readonly context: BrowserContext,
    readonly origin: string,
    readonly server: Deno.HttpServer,
  ) {}

  static async start(options: { chromium?: string; dir?: string }): Promise<Harness> {
    let origin = "";
    const server = serveStatic({
      port: 0,
      dir: options.dir,
      onListen: (url) => (origin = new URL(url).origin),
    });
    while (!origin) await new Promise((r) => setTimeout(r, 10));
    const browser = await chromium.launch({
      executablePath: findChromium(options.chromium),
      args: CHROMIUM_ARGS,
    });
    // One context for the whole test: OPFS (the saved run) lives as long as it does.
    const context = await browser.newContext({
      viewport: { width: 1280, height: 1000 },
      acceptDownloads: true,
    });
    const h = new Harness(browser, context, origin, server);
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(`${origin}/`) || url.startsWith("data:") || url.startsWith("blob:")) {
        return route.continue();
      }
      h.foreign.push(url);
      return route.abort("blockedbyclient");
    });
    return h;
  }

  /** A new tab on the page with `query`, once the worker reports ready. */
  async open(query: string): Promise<Page> {
    const page = await this.context.newPage();
    page.on("pageerror", (e) => this.pageErrors.push(e.message));
    page.on("websocket", (ws) => this.foreign.push(ws.url()));
    page.on("response", (r) => {
      if (r.status() >= 400) this.failed.push(`${r.status()} ${r.url()}`);
    });
    page.on("console", (m) => {
      if (m.type() === "error") this.pageErrors.push(m.text());
      if (Deno.env.get("WEB_TEST_VERBOSE")) console.log(`[page] ${m.text()}`);
    });
    await page.goto(`${this.origin}/?${query}`);
    await waitStatus(page, ["ready", "error", "no-webgpu"], 120);
    const s = await state(page);
    assert.equal(s.status, "ready", `page not ready: ${s.status} ${s.error ?? ""}`);
    return page;
  }

  async close(): Promise<void> {
    await this.browser.close();
    await this.server.shutdown();
  }
}

export async function state(page: Page): Promise<PageState> {
  return await page.evaluate(() => {
    const w = (globalThis as unknown as Win).webrl!;
    return JSON.parse(JSON.stringify({ ...w, chartPoints: w.chartPoints() }));
  });
}

export async function waitStatus(page: Page, statuses: string[], timeoutS: number): Promise<void> {
  await page.waitForFunction(
    (list) => list.includes((globalThis as unknown as Win).webrl?.status ?? ""),
    statuses,
    { timeout: timeoutS * 1000, polling: 200 },
  );
}

/** Waits until some logged step reaches `step`. */
export async function waitStep(page: Page, step: number, timeoutS: number): Promise<void> {
  await page.waitForFunction(
    (n) => ((globalThis as unknown as Win).webrl?.metrics ?? []).some((m) => m.step >= n),
    step,
    { timeout: timeoutS * 1000, polling: 200 },
  );
}

/** Clicks `selector` and saves the download it starts; returns the file's bytes. */
export async function downloadOf(page: Page, selector: string, path: string): Promise<Uint8Array> {
  const [dl] = await Promise.all([page.waitForEvent("download"), page.click(selector)]);
  await dl.saveAs(path);
  return await Deno.readFile(path);
}

/** A decoded PNG's size and, per row, its filtered bytes (enough to tell blank from drawn). */
export function pngRows(
  png: Uint8Array,
): { width: number; height: number; channels: number; rows: Uint8Array[] } {
  assert.deepEqual([...png.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10], "not a PNG");
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  let width = 0, height = 0, channels = 4;
  const idat: Uint8Array[] = [];
  for (let at = 8; at < png.length;) {
    const len = view.getUint32(at);
    const type = new TextDecoder().decode(png.subarray(at + 4, at + 8));
    const body = png.subarray(at + 8, at + 8 + len);
    if (type === "IHDR") {
      width = view.getUint32(at + 8);
      height = view.getUint32(at + 12);
      channels = { 0: 1, 2: 3, 4: 2, 6: 4 }[body[9]] ?? 4;
      assert.equal(body[8], 8, "8-bit PNGs only");
    } else if (type === "IDAT") idat.push(body);
    at += 12 + len;
  }
  const all = new Uint8Array(idat.reduce((a, b) => a + b.length, 0));
  idat.reduce((o, b) => (all.set(b, o), o + b.length), 0);
  const raw = unzlibSync(all);
  const stride = width * channels + 1;
  const rows = Array.from({ length: height }, (_, y) => raw.subarray(y * stride, (y + 1) * stride));
  return { width, height, channels, rows };
}

/**
 * Takes a full-page screenshot and checks that each selector is visible and that its region of the
 * image is drawn (rows within it differ from a flat fill). Returns the PNG's path.
 */
export async function checkScreenshot(
  page: Page,
  path: string,
  selectors: string[],
): Promise<string> {
  const png = await page.screenshot({ path, fullPage: true, timeout: 60_000 });
  const img = pngRows(new Uint8Array(png));
  for (const sel of selectors) {
    const box = await page.locator(sel).first().boundingBox();
    assert.ok(box && box.width > 4 && box.height > 4, `${sel} is not visible in ${path}`);
    const scroll = await page.evaluate(() => globalThis.scrollY);
    const y0 = Math.max(0, Math.floor(box.y + scroll)), y1 = Math.min(img.height, y0 + box.height);
    assert.ok(y1 > y0, `${sel} lies outside the screenshot ${path}`);
    const x0 = Math.max(0, Math.floor(box.x)), x1 = Math.min(img.width, x0 + box.width);
    const distinct = new Set<number>();
    for (let y = y0; y < y1 && distinct.size <= 16; y++) {
      // Filtered bytes of a flat region are a handful of values; text and lines give many.
      const row = img.rows[y].subarray(1 + x0 * img.channels, 1 + x1 * img.channels);
      for (const b of row) distinct.add(b);
    }
    assert.ok(distinct.size > 16, `${sel} looks blank in ${path} (${distinct.size} byte values)`);
  }
  return path;
}
