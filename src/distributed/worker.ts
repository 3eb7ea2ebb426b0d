/**
 * A rollout worker: pulls prompt jobs from the run's work queue and decodes them through a
 * continuous-batching engine (src/rollout/engine.ts) of exactly the weights version each job
 * names (worker_engines.ts: one per version and sampling setting, built when first used and
 * closed before its version's model is disposed). A job's n samples are n requests; the job is
 * scored, published and acked as soon as its own samples are done (worker_job.ts), and jobs
 * pulled while others run join the same engine at once, up to `maxInFlightJobs` jobs in flight.
 * Weight versions are fetched eagerly as the trainer publishes them (weight_cache.ts), or when a
 * job names one not held (a worker that joins late starts from the newest). A job whose weights
 * version is gone (a trainer that moved on or restarted) is dropped. The same code runs in Deno
 * and in a browser tab.
 */
import { jetstream, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { Objm } from "@nats-io/obj";
import { parseModelConfig } from "../io/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { CausalLM } from "../nn/mod.ts";
import type { Engine } from "../rollout/mod.ts";
import { decodeJob, type Job, runNames } from "./protocol.ts";
import { type VersionTimes, WeightCache } from "./weight_cache.ts";
import type { HalfWeights } from "./weights.ts";
import { VersionEngines, type WorkerPool } from "./worker_engines.ts";
import { loadRun, type RunContext, runJob } from "./worker_job.ts";

export interface WorkerOptions {
  prefix: string;
  workerId: string;
  /**
   * Jobs decoded at once at most: jobs are pulled while fewer run, and each joins the engine at
   * once. Default 8.
   */
  maxInFlightJobs?: number;
  /**
   * Sequences an engine decodes together at most; default: the run's rollout.max_num_seqs (1024
   * when the run publishes none).
   */
  maxNumSeqs?: number;
  /**
   * KV cache positions of an engine; default: the run's rollout.kv_cache_tokens, and when that is
   * null too, room for `maxInFlightJobs` jobs' samples at the longest prompt plus response length
   * (enginePoolBlocks).
   */
  kvCacheTokens?: number | null;
  /** How errors name `kvCacheTokens` (the CLI: --kv-cache-tokens). Default "kvCacheTokens". */
  kvCacheTokensKey?: string;
  /** Stop after this many jobs (tests); default run until `signal` aborts. */
  maxJobs?: number;
  signal?: AbortSignal;
  /** Hears each finished job (the CLI's log line; the browser page), with the stats so far. */
  onJob?: (job: Job, seconds: number, stats: WorkerStats) => void;
  /** Hears each weights version built, with where its time went (the CLI's log line). */
  onWeights?: (version: number, times: VersionTimes) => void;
  /** Hears each engine built, with its weights version (the CLI's log line; tests). */
  onEngine?: (version: number, engine: Engine) => void;
  /**
   * Milliseconds between asks for newly published weight versions, fetched in the background
   * while jobs run; 0 = fetch a version only when a job names it. Default 200.
   */
  watchWeightsMs?: number;
  log?: (line: string) => void;
}

export interface WorkerStats {
  jobs: number;
  dropped: number;
  /** Versions built, in order (eagerly or for a job). */
  weightVersions: number[];
  /** Engine requests submitted (n per job). */
  requests: number;
  /** Most jobs in flight at once (jobs decoded together across pulls). */
  peakJobs: number;
  /** Engines built (one per version and sampling setting; another when a pool had to grow). */
  engines: number;
  /** Steps and tokens of the engines closed so far (all of them once the worker returns). */
  engineSteps: number;
  engineTokens: number;
}

/**
 * A model from received f16 weights: the f16 bits go to the GPU as they are where it has
 * shader-f16 (the matrices; the rest converted to f32 once), else everything is converted once.
 */
function buildModel(w: HalfWeights): CausalLM {
  return CausalLM.fromTensors(parseModelConfig(w.modelConfig), w.tensors, {
    dtype: gpu().hasF16 ? "f16" : "f32",
  });
}

/** Runs jobs until `maxJobs` are done or `signal` aborts; then waits for those in flight. */
export async function runWorker(nc: NatsConnection, o: WorkerOptions): Promise<WorkerStats> {
  const names = runNames(o.prefix);
  const js = jetstream(nc);
  const consumer = await js.consumers.get(names.jobStream, names.consumer);
  const os = await new Objm(nc).open(names.bucket);
  const stats: WorkerStats = {
    jobs: 0,
    dropped: 0,
    weightVersions: [],
    requests: 0,
    peakJobs: 0,
    engines: 0,
    engineSteps: 0,
    engineTokens: 0,
  };
  const pool: WorkerPool = {
    maxNumSeqs: o.maxNumSeqs ?? null,
    kvCacheTokens: o.kvCacheTokens ?? null,
    maxInFlightJobs: Math.max(1, o.maxInFlightJobs ?? 8),
    key: o.kvCacheTokensKey ?? "kvCacheTokens",
  };
  const weights = new WeightCache<VersionEngines>(nc, names, {
    build: (w) =>
      new VersionEngines(buildModel(w), {
        pool,
        onEngine: (engine) => {
          stats.engines++;
          o.onEngine?.(w.version, engine);
        },
        onClosed: (s) => {
          stats.engineSteps += s.steps;
          stats.engineTokens += s.tokens;
        },
      }),
    dispose: async (v) => {
      await v.close();
      v.model.dispose();
    },
    pollMs: o.watchWeightsMs ?? 200,
    onBuilt: (version, times) => {
      stats.weightVersions.push(version);
      o.onWeights?.(version, times);
    },
    log: o.log,
  });
  let run: { epoch: string; ctx: Promise<RunContext> } | null = null;
  /** The run info of trainer process `epoch`, loaded once for the jobs that share it. */
  const runFor = (epoch: string) => {
    if (run?.epoch !== epoch) {
      const ctx = loadRun(os, { prefix: o.prefix, epoch, log: o.log });
      const mine = { epoch, ctx };
      ctx.catch(() => {
        if (run === mine) run = null; // the next job asks again
      });
      run = mine;
    }
    return run.ctx;
  };
  const inFlight = new Map<JsMsg, { job: Job | null; done: Promise<void> }>();
  const longestPrompt = () =>
    Math.max(0, ...[...inFlight.values()].map((f) => f.job?.promptIds.length ?? 0));

  /** One job, from its message to its ack (or its nak when something failed on the way). */
  async function serve(msg: JsMsg, entry: { job: Job | null }): Promise<void> {
    let job: Job;
    try {
      job = entry.job = await decodeJob(msg.data);
    } catch (e) {
      o.log?.(`worker ${o.workerId}: refused a job: ${(e as Error).message}`);
      msg.term();
      stats.dropped++;
      return;
    }
    try {
      const runCtx = await runFor(job.epoch);
      const got = await weights.acquire(job.epoch, job.version);
      if (!got) {
        // The trainer no longer keeps this version: the job is stale.
        msg.term();
        stats.dropped++;
        return;
      }
      let seconds;
      try {
        seconds = await runJob(msg, job, {
          run: runCtx,
          held: got.held,
          waitS: got.waitS,
          longestPrompt: longestPrompt(),
          js,
          names,
          workerId: o.workerId,
          onRequests: (n) => stats.requests += n,
        });
      } finally {
        weights.release(got.held);
      }
      stats.jobs++;
      o.onJob?.(job, seconds, stats);
    } catch (e) {
      // A lost connection or a failed read: the job goes back to the queue now.
      o.log?.(`worker ${o.workerId}: job ${job.jobId}: ${(e as Error).message}; back to the queue`);
      msg.nak();
    }
  }

  const start = (msg: JsMsg) => {
    const entry = { job: null as Job | null, done: Promise.resolve() };
    entry.done = serve(msg, entry).finally(() => inFlight.delete(msg));
    inFlight.set(msg, entry);
    stats.peakJobs = Math.max(stats.peakJobs, inFlight.size);
  };
  const wanted = () =>
    Math.min(pool.maxInFlightJobs, (o.maxJobs ?? Infinity) - stats.jobs) - inFlight.size;
  try {
    while (!o.signal?.aborted && (o.maxJobs === undefined || stats.jobs < o.maxJobs)) {
      const room = wanted();
      if (room <= 0) {
        await Promise.race([...inFlight.values()].map((f) => f.done));
        continue;
      }
      try {
        // Jobs are started as they arrive; those already queued come together.
        const batch = await consumer.fetch({ max_messages: room, expires: 1000 });
        for await (const msg of batch) start(msg);
      } catch (e) {
        // The server restarting or the run's streams being recreated: wait and ask again.
        if (o.signal?.aborted) break;
        o.log?.(`worker ${o.workerId}: ${(e as Error).message}; retrying`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  } finally {
    // Stopped: the jobs in flight finish (published and acked) before the engines close.
    await Promise.all([...inFlight.values()].map((f) => f.done));
    await weights.close();
  }
  return stats;
}
