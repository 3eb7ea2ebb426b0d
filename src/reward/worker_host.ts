/**
 * Runs inside the sandboxed Web Worker: imports the user's module and scores batches. Progress
 * goes through shared memory rather than messages so the parent can see which sample is running
 * (and time it out) even while user code blocks this thread.
 */
/// <reference lib="deno.worker" />

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
  samples: { dataSource: string; solution: string; groundTruth: string; extraInfo?: unknown }[];
  /** Positions in `samples` to skip (already timed out in an earlier attempt). */
  skip: number[];
}

type Fn = (...args: unknown[]) => unknown;

let fn: Fn | undefined;
let kwargs: Record<string, unknown> = {};
let progress: Int32Array | undefined;

self.onmessage = async (e: MessageEvent<InitMessage | BatchMessage>) => {
  const msg = e.data;
  if (msg.type === "init") {
    progress = new Int32Array(msg.progress);
    kwargs = msg.kwargs;
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
  const skip = new Set(msg.skip);
  const outcomes: unknown[] = [];
  for (const [i, s] of msg.samples.entries()) {
    if (skip.has(i)) {
      outcomes.push(null);
      continue;
    }
    // 1-based so that 0 means "between samples".
    Atomics.store(progress!, 0, i + 1);
    Atomics.add(progress!, 1, 1);
    try {
      const value = await fn!(s.dataSource, s.solution, s.groundTruth, s.extraInfo, kwargs);
      outcomes.push({ ok: true, value: cloneable(value) });
    } catch (err) {
      const denied = err instanceof Error &&
        (err.name === "NotCapable" || err.name === "PermissionDenied");
      outcomes.push({
        ok: false,
        kind: denied ? "permission_denied" : "error",
        message: describe(err),
      });
    }
  }
  Atomics.store(progress!, 0, 0);
  self.postMessage({ type: "result", id: msg.id, outcomes });
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
