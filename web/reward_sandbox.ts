/// <reference lib="webworker" />
/**
 * The sandbox a pasted reward function runs in (a dedicated worker of the trainer worker). Before
 * the user's code runs, every way out of the worker (network, storage, further workers) is
 * replaced by a function that throws PermissionDenied, as Deno's permission-less sandbox would.
 * The code's top level runs once; `compute_score` is then called once per sample.
 */
import type { SandboxReply, SandboxRequest } from "./reward_host.ts";

const BLOCKED = [
  "fetch",
  "XMLHttpRequest",
  "WebSocket",
  "EventSource",
  "WebTransport",
  "importScripts",
  "indexedDB",
  "caches",
  "Worker",
  "SharedWorker",
  "BroadcastChannel",
];

function denied(what: string): Error {
  const e = new Error(`${what} is not allowed in a reward function (no network, no storage)`);
  e.name = "PermissionDenied";
  return e;
}

/**
 * Replaces `name` on `target` and on every prototype of it that holds its own copy, so neither
 * `fetch(...)` nor `WorkerGlobalScope.prototype.fetch.call(self, ...)` reaches the original.
 */
function block(target: object, name: string, label: string): void {
  const get = () => {
    throw denied(label);
  };
  for (let o: object | null = target; o; o = Object.getPrototypeOf(o)) {
    if (o !== target && !Object.hasOwn(o, name)) continue;
    try {
      Object.defineProperty(o, name, { get, configurable: false });
    } catch {
      // a non-configurable property this browser does not let us replace
    }
  }
}

function lockDown(): void {
  for (const name of BLOCKED) block(globalThis, name, name);
  // navigator.storage reaches the origin's private file system; navigator.gpu the device.
  for (const name of ["storage", "gpu", "locks", "serviceWorker"]) {
    block(navigator, name, `navigator.${name}`);
  }
}

type Fn = (...args: unknown[]) => unknown;
let fn: Fn | null = null;
const post = (m: SandboxReply) => self.postMessage(m);

function describe(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

self.onmessage = async (e: MessageEvent<SandboxRequest>) => {
  const msg = e.data;
  if (msg.type === "init") {
    lockDown();
    try {
      const body =
        `${msg.code}\n;return typeof compute_score === "function" ? compute_score : null;`;
      fn = new Function(body)() as Fn | null;
      if (!fn) throw new Error("the code defines no function named compute_score");
      post({ type: "ready" });
    } catch (err) {
      post({ type: "init-error", message: describe(err) });
    }
    return;
  }
  const s = msg.sample;
  try {
    const value = await fn!(s.dataSource, s.solution, s.groundTruth, s.extraInfo);
    post({
      type: "outcome",
      index: msg.index,
      outcome: { ok: true, value: structuredClone(value) },
    });
  } catch (err) {
    const kind = err instanceof Error && err.name === "PermissionDenied"
      ? "permission_denied"
      : "error";
    post({
      type: "outcome",
      index: msg.index,
      outcome: { ok: false, kind, message: describe(err) },
    });
  }
};

// The module itself has loaded: the host starts timing the user's top level from here, so a slow
// module load (a cold cache, a busy machine) is not blamed on the pasted code.
post({ type: "loaded" });
