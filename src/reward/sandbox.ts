/**
 * A user's reward function (custom_reward_function.path/.name) run in a Web Worker with no
 * network, no writes and reads limited to the module's folder. The worker posts each sample's
 * outcome as it finishes. A sample over `timeoutS`, or one during which the worker crashed or
 * ended itself (Deno.exit, close()), is recorded against that sample; the worker is replaced and
 * only the samples without an outcome go to the new one. `batchTimeoutS` bounds a whole batch:
 * when it runs out the running sample is a timeout and the rest are skipped.
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { SLOT, SLOTS } from "./slots.ts";
import type { BatchScorer, FailureKind, ScoreOutcome, ScoreRequest } from "./types.ts";

/** Options of `SandboxedRewardFunction.load`. */
export interface SandboxOptions {
  /** Exported function to call (verl's custom_reward_function.name). */
  name?: string;
  /** Per-sample limit in seconds. */
  timeoutS?: number;
  /** Limit on one `scoreBatch` call in seconds; null or undefined = none. */
  batchTimeoutS?: number | null;
  /** Passed to the function as its fifth argument. */
  rewardKwargs?: Record<string, unknown>;
  /** Limit on importing the module, in seconds. */
  loadTimeoutS?: number;
}

const HOST_URL = new URL("./worker_host.ts", import.meta.url);

/**
 * The error text for a reward module that is not TS/JS (a verl user's `.py` file), or null.
 * `key` names where the path was given.
 */
export function rewardModuleProblem(
  path: string,
  key = "custom_reward_function.path",
): string | null {
  if (!/\.py[cwi]?$/i.test(path)) return null;
  const ts = path.replace(/\.py[cwi]?$/i, ".ts").split("/").at(-1);
  return `${key}=${path}: reward functions are TypeScript/JavaScript modules, run in a ` +
    "sandboxed Web Worker (no network, no writes), not Python. Port verl's " +
    "`def compute_score(data_source, solution_str, ground_truth, extra_info=None)` " +
    `to ${ts} with the same arguments in the same order, e.g.\n` +
    "  export function compute_score(dataSource, solutionStr, groundTruth, extraInfo) {\n" +
    "    return solutionStr.trim().endsWith(String(groundTruth)) ? 1.0 : 0.0;\n" +
    "  }\n" +
    `and set ${key}=${ts} (return a number, or {score, ...extra} as verl's dict).`;
}

type RunEnd =
  | { kind: "done" }
  | { kind: "timeout" | "crash" | "budget"; index: number; message: string };

export class SandboxedRewardFunction implements BatchScorer {
  /** Workers replaced after a timeout, a crash or an exit. */
  restarts = 0;
  #worker?: Worker;
  #progress = new Int32Array(new SharedArrayBuffer(4 * SLOTS));
  #batchId = 0;
  /** Reports an uncaught error of the worker to the batch in flight. */
  #active?: (message: string) => void;
  readonly #timeoutMs: number;
  readonly #budgetMs: number;

  private constructor(readonly modulePath: string, readonly opts: SandboxOptions) {
    this.#timeoutMs = (opts.timeoutS ?? 10) * 1000;
    this.#budgetMs = (opts.batchTimeoutS ?? Infinity) * 1000;
  }

  /** Imports the module in a fresh sandbox; throws if it cannot load or lacks the function. */
  static async load(path: string, opts: SandboxOptions = {}): Promise<SandboxedRewardFunction> {
    const problem = rewardModuleProblem(path);
    if (problem) throw new Error(problem);
    const abs = path.startsWith("file:") ? fileURLToPath(path) : resolve(path);
    const f = new SandboxedRewardFunction(abs, opts);
    await f.#start();
    return f;
  }

  async #start(): Promise<void> {
    this.#worker?.terminate();
    this.#progress = new Int32Array(new SharedArrayBuffer(4 * SLOTS));
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
        if (this.#worker === worker) this.#worker = undefined;
        rej(new Error(`custom_reward_function ${this.modulePath} (${name}): ${why}`));
      };
      const timer = setTimeout(() => fail(`import took longer than ${loadMs / 1000} s`), loadMs);
      worker.onmessage = (e) => {
        if (e.data.type === "ready") {
          clearTimeout(timer);
          // From now on an uncaught error (say a timer of user code) never reaches our caller:
          // it is the running sample's crash, or, between batches, the worker is replaced.
          worker.onerror = (e) => {
            e.preventDefault();
            this.#crashed(worker, e.message);
          };
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
    const deadline = performance.now() + this.#budgetMs;
    const failRest = (kind: FailureKind, message: string) => {
      for (let i = 0; i < samples.length; i++) out[i] ??= { ok: false, kind, message };
    };
    let unblamed = 0;
    while (true) {
      const pending = samples.map((_, i) => i).filter((i) => out[i] === undefined);
      if (pending.length === 0) break;
      if (performance.now() >= deadline) {
        failRest("skipped", this.#budgetText("before this sample started"));
        break;
      }
      // A worker that ended itself after the last batch (a timer calling Deno.exit) is replaced.
      if (this.#worker && Atomics.load(this.#progress, SLOT.exited) !== 0) this.#discard();
      if (!this.#worker) {
        try {
          await this.#start();
        } catch (e) {
          failRest("crash", `the sandbox worker could not be restarted: ${(e as Error).message}`);
          break;
        }
      }
      const end = await this.#run(samples, pending, out, deadline);
      if (end.kind === "done") {
        // Every outcome arrives before "done"; a missing one means the worker lost it.
        failRest("error", "the sandbox worker returned no outcome for this sample");
        break;
      }
      this.#discard();
      const kind: FailureKind = end.kind === "budget" ? "timeout" : end.kind;
      if (end.index >= 0 && out[end.index] === undefined) {
        out[end.index] = { ok: false, kind, message: end.message };
      } else if (end.kind !== "budget" && ++unblamed >= 2) {
        // The worker dies between samples (e.g. a timer in the module): nothing to retry.
        failRest(kind, end.message);
        break;
      }
      if (end.kind === "budget") {
        failRest("skipped", this.#budgetText("before this sample started"));
        break;
      }
    }
    return out as ScoreOutcome[];
  }

  #crashed(worker: Worker, message: string): void {
    if (worker !== this.#worker) return;
    if (this.#active) return this.#active(message);
    this.#discard();
  }

  #discard(): void {
    this.#worker?.terminate();
    this.#worker = undefined;
    this.restarts++;
  }

  #budgetText(when: string): string {
    return `not scored: the batch's time budget (custom_reward_function.batch_timeout_s=` +
      `${this.#budgetMs / 1000}) ran out ${when}`;
  }

  /** Sends `pending` to the worker; outcomes land in `out` as they arrive. */
  #run(
    samples: ScoreRequest[],
    pending: number[],
    out: (ScoreOutcome | undefined)[],
    deadline: number,
  ): Promise<RunEnd> {
    const worker = this.#worker!;
    const id = ++this.#batchId;
    const progress = this.#progress;
    return new Promise<RunEnd>((res) => {
      let seen = Atomics.load(progress, SLOT.started);
      let since = performance.now();
      const finish = (end: RunEnd) => {
        clearInterval(poll);
        worker.onmessage = null;
        this.#active = undefined;
        res(end);
      };
      const current = () => Atomics.load(progress, SLOT.current) - 1;
      // Polling shared memory costs nothing per sample, and works while user code blocks.
      const poll = setInterval(() => {
        const at = current();
        const exited = Atomics.load(progress, SLOT.exited);
        if (exited !== 0) {
          const how = exited === 1
            ? `Deno.exit(${Atomics.load(progress, SLOT.exitCode)})`
            : exited === 2
            ? "close()"
            : "an exit";
          return finish({
            kind: "crash",
            index: at,
            message: `the sandbox worker died: the reward function ended it with ${how} ` +
              (at >= 0 ? `while scoring sample ${at}` : "between samples"),
          });
        }
        const now = performance.now();
        const started = Atomics.load(progress, SLOT.started);
        if (started !== seen) [seen, since] = [started, now];
        if (now >= deadline) {
          return finish({
            kind: "budget",
            index: at,
            message: `still running when the batch's time budget ` +
              `(custom_reward_function.batch_timeout_s=${this.#budgetMs / 1000}) ran out`,
          });
        }
        if (at >= 0 && now - since > this.#timeoutMs) {
          finish({
            kind: "timeout",
            index: at,
            message: `no result within ${this.#timeoutMs / 1000} s (custom_reward_function.` +
              "timeout_s)",
          });
        }
      }, Math.max(5, Math.min(100, this.#timeoutMs / 5)));
      worker.onmessage = (e) => {
        if (e.data.id !== id) return;
        if (e.data.type === "outcome") out[e.data.index] = e.data.outcome;
        else if (e.data.type === "done") finish({ kind: "done" });
      };
      this.#active = (message) => {
        const at = current();
        finish({
          kind: "crash",
          index: at,
          message: `the sandbox worker crashed (uncaught ${message}) ` +
            (at >= 0 ? `while scoring sample ${at}` : "between samples"),
        });
      };
      worker.postMessage({
        type: "batch",
        id,
        samples: pending.map((index) => ({ index, ...samples[index] })),
      });
    });
  }

  close(): void {
    this.#worker?.terminate();
    this.#worker = undefined;
  }
}
