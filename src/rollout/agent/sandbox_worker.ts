/**
 * Runs inside the sandboxed Web Worker of a user's module (a tool or an interaction): imports the
 * module, builds the exported class with the host's constructor arguments, and answers the host's
 * method calls. A method the class does not define answers `undefined` (an optional hook).
 */
/// <reference lib="deno.worker" />

interface InitMessage {
  type: "init";
  url: string;
  exportName: string | null;
  ctorArgs: unknown[];
  /** Methods the class must define. */
  required: string[];
}

interface CallMessage {
  type: "call";
  id: number;
  method: string;
  args: unknown[];
}

type Instance = Record<string, unknown>;
type Ctor = new (...args: unknown[]) => Instance;

let instance: Instance | undefined;

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function pickClass(mod: Record<string, unknown>, name: string | null): Ctor {
  const isClass = (v: unknown) => typeof v === "function";
  if (name !== null) {
    if (!isClass(mod[name])) throw new Error(`the module exports no class "${name}"`);
    return mod[name] as Ctor;
  }
  if (isClass(mod.default)) return mod.default as Ctor;
  const classes = Object.keys(mod).filter((k) => isClass(mod[k]));
  if (classes.length !== 1) {
    throw new Error(
      `name the class as path.ts:ClassName (the module exports ${classes.join(", ") || "none"})`,
    );
  }
  return mod[classes[0]] as Ctor;
}

self.onmessage = async (e: MessageEvent<InitMessage | CallMessage>) => {
  const msg = e.data;
  if (msg.type === "init") {
    try {
      const mod = await import(msg.url);
      const Cls = pickClass(mod, msg.exportName);
      instance = new Cls(...msg.ctorArgs);
      const missing = msg.required.filter((m) => typeof instance![m] !== "function");
      if (missing.length) throw new Error(`the class has no ${missing.join("(), ")}()`);
      self.postMessage({ type: "ready" });
    } catch (err) {
      self.postMessage({ type: "init_error", message: describe(err) });
    }
    return;
  }
  const method = instance![msg.method];
  try {
    const value = typeof method === "function"
      ? await (method as (...a: unknown[]) => unknown).apply(instance, msg.args)
      : undefined;
    self.postMessage({ type: "result", id: msg.id, ok: true, value: structuredClone(value) });
  } catch (err) {
    self.postMessage({ type: "result", id: msg.id, ok: false, message: describe(err) });
  }
};
