/**
 * A worker's weight versions: at most two models on the GPU, fetched eagerly. A watcher asks for
 * new plans every `pollMs` and fetches the newest version in the background (reading its chunks
 * while the trainer still stores them) while the worker generates with the version it has, so a
 * job naming the new version finds it built. A newer plan supersedes an eager fetch no job is
 * waiting for; a job naming a version not held fetches it on demand. A model is disposed only
 * when no job uses it (jobs of two versions in flight may keep a third while they run; it goes
 * when one of them is released), and its disposal is awaited before the next model is built.
 * Versions are keyed by the trainer process (epoch) and number: a restarted trainer reuses
 * numbers for other weights.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { RunNames } from "./protocol.ts";
import { fetchWeights, latestPlan, type PlanAt } from "./weight_stream.ts";
import type { HalfWeights } from "./weights.ts";

/** Where a version's time went on the worker. */
export interface VersionTimes {
  /** Network + verify (from the first ask to every chunk checked). */
  fetchS: number;
  /** Storing and hashing chunks (on the decoding thread, overlapping the fetch). */
  decodeS: number;
  /** Building the model (conversions and the GPU upload). */
  buildS: number;
  /** Fetched before a job asked for it. */
  eager: boolean;
}

export interface Held<M> {
  key: string;
  version: number;
  model: M;
  times: VersionTimes;
  users: number;
}

interface Fetching {
  key: string;
  /** Jobs waiting for it (0: eager, may be superseded). */
  waiting: number;
  abort: AbortController;
  done: Promise<void>;
}

export interface WeightCacheOptions<M> {
  /** Builds a model from received weights (its GPU upload). */
  build: (w: HalfWeights) => M;
  /** Frees a model (awaited before the next build, and by `close`). */
  dispose: (model: M) => void | Promise<void>;
  /** Milliseconds between asks for new plans; 0 = no eager fetching. */
  pollMs: number;
  /** Hears each version built (tests, stats). */
  onBuilt?: (version: number, times: VersionTimes) => void;
  log?: (line: string) => void;
}

const keyOf = (epoch: string, version: number) => `${epoch}/${version}`;
/** How long a job waits for its version's plan to appear, and how often it looks. */
const ANNOUNCE_TIMEOUT_S = 60;
const ANNOUNCE_POLL_MS = 20;

export class WeightCache<M> {
  #held: Held<M>[] = [];
  #fetching: Fetching | null = null;
  /** The newest plan seen, and plans whose eager fetch failed (not retried eagerly). */
  #newest: PlanAt | null = null;
  #failed = new Set<number>();
  #stopped = false;
  #watching: Promise<void> = Promise.resolve();
  /** Disposals under way. */
  #disposing: Promise<void> = Promise.resolve();

  constructor(
    private readonly nc: NatsConnection,
    private readonly names: RunNames,
    private readonly o: WeightCacheOptions<M>,
  ) {
    if (o.pollMs > 0) this.#watching = this.#watch();
  }

  /**
   * The model of `version` of trainer process `epoch` for a job (fetched now if neither held nor
   * on its way), with the seconds the job waited; null when the stream no longer holds that
   * version (the jobs are stale). A version its trainer has not announced yet is waited for.
   * Call `release` when the job is done.
   */
  async acquire(epoch: string, version: number): Promise<{ held: Held<M>; waitS: number } | null> {
    const t0 = performance.now(), key = keyOf(epoch, version);
    for (;;) {
      const held = this.#held.find((h) => h.key === key);
      if (held) {
        held.users++;
        return { held, waitS: (performance.now() - t0) / 1000 };
      }
      if (this.#stopped) return null;
      const f = this.#fetching ?? this.#start(key, version, { waiting: 0, epoch });
      const mine = f.key === key && !f.abort.signal.aborted;
      if (!mine && f.waiting === 0) f.abort.abort(); // an eager fetch nobody waits for gives way
      f.waiting++;
      try {
        await f.done;
      } catch (e) {
        if (mine) throw e;
      } finally {
        f.waiting--;
      }
      const gone = mine && !f.abort.signal.aborted && !this.#held.some((h) => h.key === key);
      if (gone && !(await this.#announcedLater(epoch, version, t0))) return null;
    }
  }

  /**
   * Whether a version with no plan yet will still come: its trainer sends jobs as soon as the
   * weights are recorded, so a job may arrive while its version is being read back and stored.
   * True while the newest plan is of the same trainer process and not newer (after a short sleep
   * unless it is this version's, announced since the fetch looked), or no plan exists, within
   * the timeout; false for a version that is gone or superseded.
   */
  async #announcedLater(epoch: string, version: number, since: number): Promise<boolean> {
    if (this.#stopped || performance.now() - since > ANNOUNCE_TIMEOUT_S * 1000) return false;
    const plan = await latestPlan(this.nc, this.names, this.#newest?.seq ?? 0);
    if (plan) this.#newest = plan;
    const newest = this.#newest?.plan;
    if (newest && (newest.epoch !== epoch || newest.version > version)) return false;
    // Announced since the fetch looked: fetch again at once.
    if (newest?.version !== version) await new Promise((r) => setTimeout(r, ANNOUNCE_POLL_MS));
    return true;
  }

  /** Ends a job's use of `held`; a third model kept while two were in use goes now. */
  release(held: Held<M>): void {
    held.users--;
    if (this.#held.length > 2) this.#makeRoom(2);
  }

  /** Stops watching and disposes every model (waiting for their disposal). */
  async close(): Promise<void> {
    this.#stopped = true;
    this.#fetching?.abort.abort();
    await this.#watching;
    await this.#fetching?.done;
    for (const h of this.#held) this.#dispose(h.model);
    this.#held = [];
    await this.#disposing;
  }

  async #watch(): Promise<void> {
    while (!this.#stopped) {
      try {
        const plan = await latestPlan(this.nc, this.names, this.#newest?.seq ?? 0);
        if (plan) this.#newest = plan;
        const p = this.#newest;
        if (p && !this.#failed.has(p.seq)) {
          const key = keyOf(p.plan.epoch, p.plan.version);
          const f = this.#fetching;
          const wanted = !this.#held.some((h) => h.key === key) && f?.key !== key;
          if (wanted && f && f.waiting === 0) f.abort.abort(); // superseded by a newer version
          if (wanted && !this.#fetching) {
            this.#start(key, p.plan.version, { waiting: 0, plan: p });
          }
        }
      } catch (e) {
        if (!this.#stopped) this.o.log?.(`weights watch: ${(e as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, this.o.pollMs));
    }
  }

  /** Fetches and builds one version (the only fetch under way). */
  #start(
    key: string,
    version: number,
    o: { waiting: number; plan?: PlanAt; epoch?: string },
  ): Fetching {
    const abort = new AbortController();
    const f: Fetching = { key, waiting: o.waiting, abort, done: Promise.resolve() };
    f.done = (async () => {
      try {
        const got = await fetchWeights(this.nc, this.names, version, {
          plan: o.plan,
          signal: abort.signal,
        });
        if (!got && o.plan && !abort.signal.aborted) this.#failed.add(o.plan.seq); // purged
        if (!got || abort.signal.aborted) return;
        if (o.epoch !== undefined && got.weights.epoch !== o.epoch) return; // another trainer's
        this.#makeRoom(1);
        await this.#disposing;
        if (abort.signal.aborted) return;
        const t0 = performance.now();
        const model = this.o.build(got.weights);
        const times = {
          fetchS: got.fetchS,
          decodeS: got.decodeS,
          buildS: (performance.now() - t0) / 1000,
          eager: f.waiting === 0,
        };
        this.#held.push({ key, version, model, times, users: 0 });
        this.o.onBuilt?.(version, times);
      } catch (e) {
        if (o.plan) this.#failed.add(o.plan.seq);
        if (f.waiting > 0) throw e;
        this.o.log?.(`weights v${version}: ${(e as Error).message}`);
      } finally {
        if (this.#fetching === f) this.#fetching = null;
      }
    })();
    f.done.catch(() => {}); // thrown to the jobs that wait (acquire)
    this.#fetching = f;
    return f;
  }

  /** Disposes the oldest unused models until at most `keep` are held (those in use stay). */
  #makeRoom(keep: number): void {
    while (this.#held.length > keep) {
      const free = this.#held.filter((h) => h.users === 0);
      if (free.length === 0) return;
      const old = free.reduce((a, b) => (a.version <= b.version ? a : b));
      this.#held = this.#held.filter((h) => h !== old);
      this.#dispose(old.model);
    }
  }

  #dispose(model: M): void {
    const done = Promise.resolve(this.o.dispose(model)).catch((e) =>
      this.o.log?.(`weights: disposing a version failed: ${(e as Error).message}`)
    );
    this.#disposing = Promise.all([this.#disposing, done]).then(() => {});
  }
}
