/**
 * A user's tool module (`class_name: ./my_tool.ts` or `./my_tool.ts:MyTool` in the tool YAML) run
 * in a Web Worker with no network, no writes and reads limited to the module's folder, like
 * reward code. The module exports a class built with `(config, tool_schema)` whose methods mirror
 * verl's BaseTool: `execute(instanceId, parameters)` returning a string or `{text, reward?,
 * metrics?}`, and optionally `create(instanceId, createKwargs)`, `calcReward(instanceId)`,
 * `release(instanceId)`. A call over `config.timeout` seconds (default 30) fails with a timeout;
 * the worker is then replaced (its instances are gone, so their later calls fail too).
 */
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { type AgentTool, checkArguments, type ToolResult, type ToolSchema } from "./types.ts";

const WORKER_URL = new URL("./tool_worker.ts", import.meta.url);

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

export class UserTool implements AgentTool {
  readonly name: string;
  #worker?: Worker;
  #ready?: Promise<void>;
  #pending = new Map<number, Pending>();
  #nextId = 0;
  readonly #timeoutMs: number;

  private constructor(
    readonly modulePath: string,
    readonly exportName: string | null,
    readonly config: Record<string, unknown>,
    readonly schema: ToolSchema,
  ) {
    this.name = schema.function.name;
    this.#timeoutMs = Number(config.timeout ?? 30) * 1000;
  }

  /** Loads the module in a fresh sandbox; throws naming `at` if it cannot load. */
  static async load(
    spec: { path: string; exportName: string | null },
    config: Record<string, unknown>,
    schema: ToolSchema,
    at: string,
  ): Promise<UserTool> {
    const t = new UserTool(spec.path, spec.exportName, config, schema);
    try {
      await t.#start();
    } catch (e) {
      throw new Error(`${at}.class_name=${spec.path}: ${(e as Error).message}`);
    }
    return t;
  }

  #start(): Promise<void> {
    this.#worker?.terminate();
    const worker = new Worker(WORKER_URL, {
      type: "module",
      name: `tool-${this.name}`,
      deno: {
        permissions: {
          net: false,
          write: false,
          read: [dirname(this.modulePath)],
          env: false,
          run: false,
          ffi: false,
          sys: false,
          import: false,
        },
      },
    } as WorkerOptions);
    this.#worker = worker;
    this.#ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        worker.terminate();
        reject(new Error("the module did not load within 60 s"));
      }, 60_000);
      worker.onmessage = (e) => {
        const m = e.data;
        if (m.type === "ready") {
          clearTimeout(timer);
          resolve();
        } else if (m.type === "init_error") {
          clearTimeout(timer);
          worker.terminate();
          reject(new Error(m.message));
        } else if (m.type === "result") {
          const p = this.#pending.get(m.id);
          if (!p) return;
          this.#pending.delete(m.id);
          if (m.ok) p.resolve(m.value);
          else p.reject(new Error(m.message));
        }
      };
      worker.onerror = (e) => {
        e.preventDefault();
        clearTimeout(timer);
        const err = new Error(`the tool's worker failed: ${e.message}`);
        for (const p of this.#pending.values()) p.reject(err);
        this.#pending.clear();
        reject(err);
      };
    });
    worker.postMessage({
      type: "init",
      url: pathToFileURL(this.modulePath).href,
      exportName: this.exportName,
      config: this.config,
      schema: this.schema,
    });
    return this.#ready;
  }

  async #call(method: string, instanceId: string, arg: Record<string, unknown>): Promise<unknown> {
    await this.#ready;
    const id = this.#nextId++;
    const worker = this.#worker!;
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`${this.name}.${method} ran over ${this.#timeoutMs / 1000} s`));
        // A hung call holds the worker's only thread: start a fresh one for later calls.
        if (this.#worker === worker) this.#start().catch(() => {});
      }, this.#timeoutMs);
      this.#pending.set(id, {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      worker.postMessage({ type: "call", id, method, instanceId, arg });
    });
  }

  async create(instanceId: string, createKwargs: Record<string, unknown>): Promise<void> {
    await this.#call("create", instanceId, createKwargs);
  }

  async execute(instanceId: string, args: Record<string, unknown>): Promise<ToolResult> {
    checkArguments(this.schema, args);
    const v = await this.#call("execute", instanceId, args);
    if (typeof v === "string") return { text: v };
    const r = v as Partial<ToolResult> | null;
    if (r && typeof r.text === "string") {
      return { text: r.text, reward: Number(r.reward ?? 0), metrics: r.metrics };
    }
    throw new Error(`${this.name}.execute returned neither a string nor {text}`);
  }

  async calcReward(instanceId: string): Promise<number> {
    const v = await this.#call("calcReward", instanceId, {});
    return v === undefined ? 0 : Number(v);
  }

  async release(instanceId: string): Promise<void> {
    await this.#call("release", instanceId, {});
  }

  close(): void {
    this.#worker?.terminate();
    this.#worker = undefined;
  }
}
