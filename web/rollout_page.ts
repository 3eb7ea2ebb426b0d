/// <reference lib="dom" />
/**
 * web/rollout.html: a form that starts the rollout Web Worker and shows its progress. The query
 * string fills the form (`?url=ws://...&prefix=...&seed=...&id=...`) and `autostart=1` joins
 * at once; `globalThis.webrlRollout` mirrors the last report (for tests).
 */
import type { JoinMessage, RolloutReport } from "./rollout_worker.ts";

const $ = <T extends HTMLElement>(sel: string) => document.querySelector(sel) as T;
const form = $<HTMLFormElement>("#join");
const state: RolloutReport & { jobs: number } = { status: "left", jobs: 0 };
(globalThis as unknown as { webrlRollout: typeof state }).webrlRollout = state;
$("#status").textContent = "idle";

const params = new URLSearchParams(location.search);
for (const name of ["url", "prefix", "seed", "id"]) {
  const v = params.get(name);
  if (v !== null) (form.elements.namedItem(name) as HTMLInputElement).value = v;
}

let worker: Worker | null = null;

function show(r: RolloutReport): void {
  Object.assign(state, r);
  $("#status").textContent = r.status;
  if (r.adapter) $("#adapter").textContent = `GPU: ${r.adapter}`;
  if (r.jobs !== undefined) {
    $("#progress").textContent = `${r.jobs} jobs done` +
      (r.requests ? ` (${r.requests} samples, up to ${r.peakJobs} jobs at once)` : "") +
      (r.lastJob ? `; last ${r.lastJob} with weights v${r.version}` : "");
  }
  $("#error-line").textContent = r.error ?? "";
  const running = r.status === "joining" || r.status === "working";
  $<HTMLButtonElement>("#start").disabled = running;
  $<HTMLButtonElement>("#stop").disabled = !running;
}

form.addEventListener("submit", (e) => {
  e.preventDefault();
  const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value.trim();
  worker?.terminate();
  worker = new Worker("rollout_worker.js", { type: "module" });
  worker.onmessage = (m: MessageEvent<RolloutReport>) => show(m.data);
  worker.onerror = (m) => show({ status: "error", error: m.message });
  const msg: JoinMessage = {
    join: { url: value("url"), prefix: value("prefix"), seed: value("seed"), id: value("id") },
  };
  worker.postMessage(msg);
  show({ status: "joining" });
});

$("#stop").addEventListener("click", () => {
  const msg: JoinMessage = { leave: true };
  worker?.postMessage(msg);
});

if (params.get("autostart") === "1") form.requestSubmit();
