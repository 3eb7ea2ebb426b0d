/**
 * A pasted `compute_score` run in a dedicated Web Worker of its own (web/reward_sandbox.ts), under
 * the same rules as Deno's sandbox (src/reward/sandbox.ts): no network and no storage (those
 * globals throw PermissionDenied), one sample at a time with a per-sample timeout. A sample that
 * times out or kills its worker is recorded against that sample and the worker is replaced; the
 * rest of the batch goes on. Failures are outcomes, never throws, so the RewardManager counts them.
 */
import type { BatchScorer, ScoreOutcome, ScoreRequest } from "../src/reward/mod.ts";

/** Sandbox -> host. */
export type SandboxReply =
  | { type: "loaded" }
  | { type: "ready" }
  | { type: "init-error"; message: string }
  | { type: "outcome"; index: number; outcome: ScoreOutcome };

/** Host -> sandbox. */
export type SandboxRequest =
  | { type: "init"; code: string }
  | { type: "score"; index: number; sample: ScoreRequest };

export interface BrowserSandboxOptions {
  /** Per-sample limit (custom_reward_function.timeout_s). */
  timeoutS: number;
  /** The bundled web/reward_sandbox.ts. */
  workerUrl: URL;
}

/** Seconds the sandbox module itself may take to load before the user's code runs. */
const LOAD_LIMIT_S = 60;
/** Starts tried before a sandbox that never reports "loaded" is given up on. */
const LOAD_TRIES = 2;

/** The sandbox worker did not report "loaded" in time (its module never ran). */
class SandboxLoadTimeout extends Error {}

export class BrowserSandbox implements BatchScorer {
  /** Workers replaced after a timeout or a crash. */
  restarts = 0;
  #worker: Worker | null = null;

  private constructor(readonly code: string, readonly options: BrowserSandboxOptions) {}

  /** Starts a sandbox and runs the code's top level; throws when it fails or lacks the function. */
  static async load(code: string, options: BrowserSandboxOptions): Promise<BrowserSandbox> {
    const s = new BrowserSandbox(stripExports(code), options);
    // A worker that never reports "loaded" (seen once in a busy test run, while the next worker
    // started at once) gets a fresh one; the user's code has not run yet, so nothing is repeated.
    for (let tryNo = 1;; tryNo++) {
      try {
        await s.#start();
        return s;
      } catch (e) {
        if (!(e instanceof SandboxLoadTimeout) || tryNo >= LOAD_TRIES) throw e;
      }
    }
  }

  async #start(): Promise<void> {
    this.#worker?.terminate();
    const worker = new Worker(this.options.workerUrl, { type: "module", name: "reward-sandbox" });
    this.#worker = worker;
    const limitMs = Math.max(1000, this.options.timeoutS * 1000);
    await new Promise<void>((resolve, reject) => {
      const fail = (why: string, ErrorType: new (m: string) => Error = Error) => {
        clearTimeout(timer);
        worker.terminate();
        if (this.#worker === worker) this.#worker = null;
        reject(new ErrorType(`reward function: ${why}`));
      };
      // The user's top level is timed from the sandbox's "loaded", so a slow module load (a cold
      // cache, a busy machine) is not blamed on it; the load itself gets a generous limit.
      let timer = setTimeout(
        () => fail(`the sandbox did not start in ${LOAD_LIMIT_S} s`, SandboxLoadTimeout),
        LOAD_LIMIT_S * 1000,
      );
      worker.onmessage = (e: MessageEvent<SandboxReply>) => {
        if (e.data.type === "loaded") {
          clearTimeout(timer);
          timer = setTimeout(() => fail(`its top level ran over ${limitMs / 1000} s`), limitMs);
          worker.postMessage({ type: "init", code: this.code } satisfies SandboxRequest);
        } else if (e.data.type === "ready") {
          clearTimeout(timer);
          resolve();
        } else if (e.data.type === "init-error") fail(e.data.message);
      };
      worker.onerror = (e) => {
        e.preventDefault();
        fail(e.message || "the sandbox worker failed to start");
      };
    });
  }

  /** One sample: its outcome, or a timeout / crash outcome after which the worker is replaced. */
  #score(index: number, sample: ScoreRequest): Promise<ScoreOutcome> {
    const worker = this.#worker!;
    const ms = this.options.timeoutS * 1000;
    return new Promise<ScoreOutcome>((resolve) => {
      const done = (o: ScoreOutcome, broken: boolean) => {
        clearTimeout(timer);
        worker.onmessage = null;
        worker.onerror = null;
        if (broken) {
          worker.terminate();
          if (this.#worker === worker) this.#worker = null;
          this.restarts++;
        }
        resolve(o);
      };
      const timer = setTimeout(() =>
        done({
          ok: false,
          kind: "timeout",
          message: `no result within ${ms / 1000} s (custom_reward_function.timeout_s)`,
        }, true), ms);
      worker.onmessage = (e: MessageEvent<SandboxReply>) => {
        if (e.data.type === "outcome" && e.data.index === index) done(e.data.outcome, false);
      };
      worker.onerror = (e) => {
        e.preventDefault();
        done({
          ok: false,
          kind: "crash",
          message:
            `the sandbox worker crashed (uncaught ${e.message}) while scoring sample ${index}`,
        }, true);
      };
      worker.postMessage({ type: "score", index, sample } satisfies SandboxRequest);
    });
  }

  async scoreBatch(samples: ScoreRequest[]): Promise<ScoreOutcome[]> {
    const out: ScoreOutcome[] = [];
    for (const [i, s] of samples.entries()) {
      if (!this.#worker) {
        try {
          await this.#start();
        } catch (e) {
          const message = `the sandbox could not be restarted: ${(e as Error).message}`;
          while (out.length < samples.length) out.push({ ok: false, kind: "crash", message });
          break;
        }
      }
      out.push(await this.#score(i, s));
    }
    return out;
  }

  close(): void {
    this.#worker?.terminate();
    this.#worker = null;
  }
}

/** `export function f` / `export default function f` pasted from a module: the function stays. */
export function stripExports(code: string): string {
  return code.replace(
    /^(\s*)export\s+(?:default\s+)?(?=(?:async\s+)?function|const|let|var)/gm,
    "$1",
  );
}
