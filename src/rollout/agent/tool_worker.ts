/**
 * Runs inside a user tool's sandboxed Web Worker: imports the module, builds the exported class
 * with (config, tool_schema) as verl's BaseTool, and answers the host's lifecycle calls.
 */
/// <reference lib="deno.worker" />

interface InitMessage {
  type: "init";
  url: string;
  exportName: string | null;
  config: Record<string, unknown>;
  schema: unknown;
}

interface CallMessage {
  type: "call";
  id: number;
  method: "create" | "execute" | "calcReward" | "release";
  instanceId: string;
  arg: Record<string, unknown>;
}

type ToolObject = Record<string, unknown>;
type Ctor = new (config: unknown, schema: unknown) => ToolObject;

let tool: ToolObject | undefined;

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
      tool = new Cls(msg.config, msg.schema);
      if (typeof tool.execute !== "function") throw new Error("the tool class has no execute()");
      self.postMessage({ type: "ready" });
    } catch (err) {
      self.postMessage({ type: "init_error", message: describe(err) });
    }
    return;
  }
  const method = tool![msg.method];
  try {
    const value = typeof method === "function"
      ? await (method as (...a: unknown[]) => unknown).call(tool, msg.instanceId, msg.arg)
      : undefined;
    self.postMessage({ type: "result", id: msg.id, ok: true, value: structuredClone(value) });
  } catch (err) {
    self.postMessage({ type: "result", id: msg.id, ok: false, message: describe(err) });
  }
};
