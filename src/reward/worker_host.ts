/**
 * Runs inside the sandboxed Web Worker: imports the user's module and scores samples, posting
 * each sample's outcome as soon as it is known. Progress goes through shared memory rather than
 * messages so the parent can see which sample is running (and time it out) even while user code
 * blocks this thread, and can tell a worker that ended itself (Deno.exit, close()) from a hang.
 */
/// <reference lib="deno.worker" />
import { SLOT } from "./slots.ts";

interface InitMessage {
  type: "init";
  url: string;
  name: string;
  kwargs: Record<string, unknown>;
  progress: SharedArrayBuffer;
}

interface BatchMessage {
  type: "batch";
  id: number;
  /** The samples still to score, each with its position in the caller's batch. */
  samples: {
    index: number;
    dataSource: string;
    solution: string;
    groundTruth: string;
    extraInfo?: unknown;
  }[];
}

type Fn = (...args: unknown[]) => unknown;

let fn: Fn | undefined;
let kwargs: Record<string, unknown> = {};
let progress: Int32Array | undefined;

/** Records in shared memory that user code is ending the worker, before it goes. */
function watchExits(p: Int32Array): void {
  const exit = Deno.exit;
  Object.defineProperty(Deno, "exit", {
    configurable: true,
    writable: true,
    value: (code?: number) => {
      Atomics.store(p, SLOT.exitCode, code ?? 0);
      Atomics.store(p, SLOT.exited, 1);
      return exit(code);
    },
  });
  const close = globalThis.close.bind(globalThis);
  Object.defineProperty(globalThis, "close", {
    configurable: true,
    writable: true,
    value: () => {
      Atomics.store(p, SLOT.exited, 2);
      close();
    },
  });
  addEventListener("unload", () => {
    if (Atomics.load(p, SLOT.exited) === 0) Atomics.store(p, SLOT.exited, 3);
  });
}

self.onmessage = async (e: MessageEvent<InitMessage | BatchMessage>) => {
  const msg = e.data;
  if (msg.type === "init") {
    progress = new Int32Array(msg.progress);
    kwargs = msg.kwargs;
    watchExits(progress);
    try {
      const mod = await import(msg.url);
      const f = mod[msg.name];
      if (typeof f !== "function") {
        const names = Object.keys(mod).filter((k) => typeof mod[k] === "function");
        throw new Error(
          `module does not export a function "${msg.name}" (functions: ${
            names.join(", ") || "none"
          })`,
        );
      }
      fn = f;
      self.postMessage({ type: "ready" });
    } catch (err) {
      self.postMessage({ type: "init_error", message: describe(err) });
    }
    return;
  }
  const p = progress!;
  for (const s of msg.samples) {
    // 1-based so that 0 means "between samples".
    Atomics.store(p, SLOT.current, s.index + 1);
    Atomics.add(p, SLOT.started, 1);
    let outcome: unknown;
    try {
      const value = await fn!(s.dataSource, s.solution, s.groundTruth, s.extraInfo, kwargs);
      outcome = { ok: true, value: cloneable(value) };
    } catch (err) {
      const denied = err instanceof Error &&
        (err.name === "NotCapable" || err.name === "PermissionDenied");
      outcome = { ok: false, kind: denied ? "permission_denied" : "error", message: describe(err) };
    }
    Atomics.store(p, SLOT.current, 0);
    self.postMessage({ type: "outcome", id: msg.id, index: s.index, outcome });
  }
  self.postMessage({ type: "done", id: msg.id });
};

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** Values that cannot cross postMessage (functions, class instances with such) become errors. */
function cloneable(value: unknown): unknown {
  try {
    return structuredClone(value);
  } catch {
    throw new Error(`returned a value that cannot be copied out of the worker: ${String(value)}`);
  }
}
