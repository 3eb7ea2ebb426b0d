/**
 * A user's reward function (custom_reward_function.path/.name) run in a Web Worker with no
 * network, no writes and reads limited to the module's folder. Samples go over in one message
 * per batch; a sample that exceeds the time limit, or crashes the worker, is recorded and the
 * worker is replaced so the run goes on.
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { BatchScorer, FailureKind, ScoreOutcome, ScoreRequest } from "./types.ts";

/** Options of `SandboxedRewardFunction.load`. */
export interface SandboxOptions {
  /** Exported function to call (verl's custom_reward_function.name). */
  name?: string;
  /** Per-sample limit in seconds. */
  timeoutS?: number;
  /** Passed to the function as its fifth argument. */
  rewardKwargs?: Record<string, unknown>;
  /** Limit on importing the module, in seconds. */
  loadTimeoutS?: number;
}

const HOST_URL = new URL("./worker_host.ts", import.meta.url);

type RunEnd =
  | { kind: "done"; outcomes: (ScoreOutcome | null)[] }
  | { kind: "timeout" | "crash"; index: number; message: string };

export class SandboxedRewardFunction implements BatchScorer {
  /** Workers replaced after a timeout or crash. */
  restarts = 0;
  #worker?: Worker;
  #progress = new Int32Array(new SharedArrayBuffer(8));
  #batchId = 0;
  readonly #timeoutMs: number;

  private constructor(readonly modulePath: string, readonly opts: SandboxOptions) {
    this.#timeoutMs = (opts.timeoutS ?? 10) * 1000;
  }

  /** Imports the module in a fresh sandbox; throws if it cannot load or lacks the function. */
  static async load(path: string, opts: SandboxOptions = {}): Promise<SandboxedRewardFunction> {
    const abs = path.startsWith("file:") ? fileURLToPath(path) : resolve(path);
    const f = new SandboxedRewardFunction(abs, opts);
    await f.#start();
    return f;
  }

  async #start(): Promise<void> {
    this.#worker?.terminate();
    this.#progress = new Int32Array(new SharedArrayBuffer(8));
    let worker: Worker;
    try {
      worker = new Worker(HOST_URL, {
        type: "module",
        name: "custom-reward",
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
    } catch (e) {
      const msg = (e as Error).message;
      if (/unstable-worker-options/.test(msg)) {
        throw new Error(
          "custom_reward_function runs in a permission-restricted worker, which needs Deno's " +
            '--unstable-worker-options flag (or "unstable": ["worker-options"] in deno.json)',
        );
      }
      throw e;
    }
    this.#worker = worker;
    const name = this.opts.name ?? "compute_score";
    const loadMs = (this.opts.loadTimeoutS ?? 60) * 1000;
    await new Promise<void>((res, rej) => {
      const fail = (why: string) => {
        clearTimeout(timer);
        worker.terminate();
        rej(new Error(`custom_reward_function ${this.modulePath} (${name}): ${why}`));
      };
      const timer = setTimeout(() => fail(`import took longer than ${loadMs / 1000} s`), loadMs);
      worker.onmessage = (e) => {
        if (e.data.type === "ready") {
          clearTimeout(timer);
          res();
        } else if (e.data.type === "init_error") fail(e.data.message);
      };
      worker.onerror = (e) => {
        e.preventDefault();
        fail(e.message);
      };
      worker.postMessage({
        type: "init",
        url: pathToFileURL(this.modulePath).href,
        name,
        kwargs: this.opts.rewardKwargs ?? {},
        progress: this.#progress.buffer,
      });
    });
  }

  /** Scores a batch; failures come back as outcomes, never as a throw. */
  async scoreBatch(samples: ScoreRequest[]): Promise<ScoreOutcome[]> {
    const out: (ScoreOutcome | undefined)[] = new Array(samples.length);
    const skip = new Set<number>();
    while (true) {
      const end = await this.#run(samples, [...skip]);
      if (end.kind === "done") {
        end.outcomes.forEach((o, i) => {
          if (!skip.has(i)) out[i] = o!;
        });
        return out as ScoreOutcome[];
      }
      await this.#start();
      this.restarts++;
      if (end.index < 0) {
        // The worker died between samples: nothing to blame, so fail the unscored rest.
        for (let i = 0; i < samples.length; i++) {
          out[i] ??= { ok: false, kind: "error", message: end.message };
        }
        return out as ScoreOutcome[];
      }
      const kind: FailureKind = end.kind === "timeout" ? "timeout" : "error";
      out[end.index] = { ok: false, kind, message: end.message };
      skip.add(end.index);
    }
  }

  #run(samples: ScoreRequest[], skip: number[]): Promise<RunEnd> {
    const worker = this.#worker!;
    const id = ++this.#batchId;
    const progress = this.#progress;
    return new Promise<RunEnd>((res) => {
      let seen = Atomics.load(progress, 1);
      let since = performance.now();
      const finish = (end: RunEnd) => {
        clearInterval(poll);
        worker.onmessage = null;
        worker.onerror = null;
        res(end);
      };
      // Polling shared memory costs nothing per sample, and works while user code blocks.
      const poll = setInterval(() => {
        const started = Atomics.load(progress, 1);
        if (started !== seen) [seen, since] = [started, performance.now()];
        const current = Atomics.load(progress, 0);
        if (current > 0 && performance.now() - since > this.#timeoutMs) {
          finish({
            kind: "timeout",
            index: current - 1,
            message: `no result within ${this.#timeoutMs / 1000} s`,
          });
        }
      }, Math.max(5, Math.min(100, this.#timeoutMs / 5)));
      worker.onmessage = (e) => {
        if (e.data.type === "result" && e.data.id === id) {
          finish({ kind: "done", outcomes: e.data.outcomes });
        }
      };
      worker.onerror = (e) => {
        e.preventDefault();
        finish({
          kind: "crash",
          index: Atomics.load(progress, 0) - 1,
          message: `worker crashed: ${e.message}`,
        });
      };
      worker.postMessage({ type: "batch", id, samples, skip });
    });
  }

  close(): void {
    this.#worker?.terminate();
    this.#worker = undefined;
  }
}
