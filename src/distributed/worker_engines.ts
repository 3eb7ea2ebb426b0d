/**
 * The continuous-batching engines of one weights version a worker holds (worker.ts). An engine
 * has one sampling setting for all its requests (EngineOptions.sampling) while the response
 * length is per request, so the version keeps one engine per sampling setting, built when a job
 * first needs it. Its pool follows the trainer's rule (enginePoolBlocks): `maxNumSeqs` sequences
 * at most, and blocks for `maxInFlightJobs` jobs' n samples at the longest prompt plus response
 * length seen (the jobs the worker holds when it is built), or `kvCacheTokens` when given. Pool
 * sizes the worker leaves unset, and prefix caching, come from the run's rollout settings
 * (RunInfo.engine), else the engine's defaults. A job
 * that needs a bigger pool (a longer prompt, more samples) gets a new engine; the old one takes
 * no new jobs and is closed once its jobs are done. `close` waits for every engine to finish
 * and frees their pools: the weight cache calls it before the version's model is disposed.
 */
import { ENGINE_MAX_NUM_SEQS, enginePoolOptions, type EngineSettings } from "../config/mod.ts";
import type { CausalLM, KvDtype } from "../nn/mod.ts";
import { Engine, type EngineStats } from "../rollout/mod.ts";
import type { JobSampling } from "./protocol.ts";

/** The worker's pool settings (WorkerOptions). */
export interface WorkerPool {
  /** Sequences decoded together at most; null: the run's rollout.max_num_seqs. */
  maxNumSeqs: number | null;
  /** KV cache positions of an engine; null: the run's, else sized from the jobs (module doc). */
  kvCacheTokens: number | null;
  /** Jobs decoded at once at most. */
  maxInFlightJobs: number;
  /** The option's name in errors (e.g. the CLI flag). */
  key: string;
}

/** What an engine of a job needs besides the model. */
export interface EngineSetup {
  sampling: JobSampling;
  kvDtype: KvDtype;
  eosTokenIds: number[];
  padTokenId: number;
  /** Samples of the job. */
  n: number;
  /** Longest prompt plus response length to make room for (the job's at least). */
  longest: number;
  /** The run's rollout engine settings (RunInfo.engine), if it published them. */
  run?: EngineSettings;
}

interface Slot {
  engine: Engine;
  key: string;
  n: number;
  longest: number;
  users: number;
  retired: boolean;
  closed: boolean;
}

/** An engine lent to one job; `release` when its requests are done. */
export interface EngineLease {
  engine: Engine;
  release: () => void;
}

export interface VersionEnginesOptions {
  pool: WorkerPool;
  /** Hears each engine built. */
  onEngine?: (engine: Engine) => void;
  /** Hears each engine's stats once it is closed. */
  onClosed?: (stats: EngineStats) => void;
}

export class VersionEngines {
  readonly #slots = new Map<string, Slot>();
  #closing: Promise<void> = Promise.resolve();

  constructor(readonly model: CausalLM, private readonly o: VersionEnginesOptions) {}

  /** The engine of `s`'s sampling setting, with room for the job (a bigger one if needed). */
  acquire(s: EngineSetup): EngineLease {
    const p = this.o.pool;
    const maxSeqs = p.maxNumSeqs ?? s.run?.maxNumSeqs ?? ENGINE_MAX_NUM_SEQS;
    const runTokens = p.kvCacheTokens === null ? s.run?.kvCacheTokens ?? null : null;
    const prefixCaching = s.run?.prefixCaching ?? true;
    const key = JSON.stringify([
      s.sampling,
      s.kvDtype,
      s.eosTokenIds,
      s.padTokenId,
      maxSeqs,
      prefixCaching,
    ]);
    let slot = this.#slots.get(key);
    const n = Math.max(s.n, slot?.n ?? 0), longest = Math.max(s.longest, slot?.longest ?? 0);
    const pool = enginePoolOptions({
      maxNumSeqs: maxSeqs,
      kvCacheTokens: p.kvCacheTokens ?? runTokens,
      prefixCaching,
      key: runTokens === null ? p.key : "actor_rollout_ref.rollout.kv_cache_tokens (the run's)",
    }, { sequences: p.maxInFlightJobs * n, longest });
    if (!slot || pool.numBlocks > slot.engine.options.numBlocks) {
      if (slot) this.#retire(slot);
      const engine = new Engine(this.model, {
        ...pool,
        kvDtype: s.kvDtype,
        eosTokenIds: s.eosTokenIds,
        padTokenId: s.padTokenId,
        sampling: s.sampling,
      });
      slot = { engine, key, n, longest, users: 0, retired: false, closed: false };
      this.#slots.set(key, slot);
      this.o.onEngine?.(engine);
    }
    const held = slot;
    held.users++;
    let released = false;
    return {
      engine: held.engine,
      release: () => {
        if (released) return;
        released = true;
        held.users--;
        if (held.retired && held.users === 0) this.#close(held);
      },
    };
  }

  /** Takes no new jobs on `slot`'s engine; closes it once its jobs are done. */
  #retire(slot: Slot): void {
    slot.retired = true;
    this.#slots.delete(slot.key);
    if (slot.users === 0) this.#close(slot);
  }

  #close(slot: Slot): void {
    if (slot.closed) return;
    slot.closed = true;
    const closed = slot.engine.close().then(() => this.o.onClosed?.(slot.engine.stats()));
    this.#closing = Promise.all([this.#closing, closed]).then(() => {});
  }

  /** Closes every engine once its requests are done (their pools freed). */
  async close(): Promise<void> {
    for (const slot of [...this.#slots.values()]) {
      slot.retired = true;
      this.#slots.delete(slot.key);
      this.#close(slot);
    }
    await this.#closing;
  }
}
