/**
 * A user's module (a tool or an interaction) run in a Web Worker with no writes, reads limited to
 * the module's folder and network only to the hosts its spec names (none by default), like reward
 * code. The module exports a class; the worker
 * builds one instance with the host's constructor arguments and runs the host's method calls on
 * it. A call over the timeout fails; the worker is then replaced by a fresh one (the old
 * instance's state is gone, so calls about its earlier sessions fail too).
 */
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";

const WORKER_URL = new URL("./sandbox_worker.ts", import.meta.url);

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

export interface SandboxSpec {
  /** Absolute path of the module. */
  path: string;
  /** The exported class (`path.ts:Name`); null = the default export or the only class. */
  exportName: string | null;
  /** What the class is built with (structured-cloneable). */
  ctorArgs: unknown[];
  /** Methods the class must define; the others are optional hooks. */
  required: string[];
  /** Names the module in timeout errors (the tool's or interaction's name). */
  label: string;
  timeoutMs: number;
  /** `host` or `host:port` entries the module may connect to; empty = no network. */
  netHosts?: string[];
}

export class SandboxedModule {
  #worker?: Worker;
  #ready?: Promise<void>;
  #pending = new Map<number, Pending>();
  #nextId = 0;

  private constructor(readonly spec: SandboxSpec) {}

  /** Loads the module in a fresh sandbox; throws with the reason it cannot load. */
  static async load(spec: SandboxSpec): Promise<SandboxedModule> {
    const m = new SandboxedModule(spec);
    await m.#start();
    return m;
  }

  #start(): Promise<void> {
    this.#worker?.terminate();
    const worker = new Worker(WORKER_URL, {
      type: "module",
      name: `user-${this.spec.label}`,
      deno: {
        permissions: {
          net: this.spec.netHosts?.length ? this.spec.netHosts : false,
          write: false,
          read: [dirname(this.spec.path)],
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
        const err = new Error(`the module's worker failed: ${e.message}`);
        for (const p of this.#pending.values()) p.reject(err);
        this.#pending.clear();
        reject(err);
      };
    });
    worker.postMessage({
      type: "init",
      url: pathToFileURL(this.spec.path).href,
      exportName: this.spec.exportName,
      ctorArgs: this.spec.ctorArgs,
      required: this.spec.required,
    });
    return this.#ready;
  }

  /** Calls `method(...args)` on the instance; rejects on a throw or after the timeout. */
  async call(method: string, args: unknown[]): Promise<unknown> {
    await this.#ready;
    const id = this.#nextId++;
    const worker = this.#worker!;
    const ms = this.spec.timeoutMs;
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`${this.spec.label}.${method} ran over ${ms / 1000} s`));
        // A hung call holds the worker's only thread: start a fresh one for later calls.
        if (this.#worker === worker) this.#start().catch(() => {});
      }, ms);
      this.#pending.set(id, {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      worker.postMessage({ type: "call", id, method, args });
    });
  }

  close(): void {
    this.#worker?.terminate();
    this.#worker = undefined;
  }
}
