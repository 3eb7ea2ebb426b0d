/**
 * A rollout worker: pulls prompt jobs from the run's work queue, generates each job's n samples
 * with their log-probs under exactly the weights version the job names, scores them with the
 * built-in reward functions and publishes the trajectory before acking the job. Weight versions
 * are fetched eagerly as the trainer publishes them (weight_cache.ts), or when a job names one not
 * held (a worker that joins late starts from the newest). A job whose weights version is gone (a
 * trainer that moved on or restarted) is dropped. The same code runs in Deno and in a browser tab.
 */
import { jetstream, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { type ObjectStore, Objm } from "@nats-io/obj";
import { parseModelConfig, tokenizerFromFiles } from "../io/mod.ts";
import type { Tokenizer } from "../io/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { CausalLM } from "../nn/mod.ts";
import { RewardManager } from "../reward/mod.ts";
import { generate } from "../rollout/mod.ts";
import type { RunInfo } from "./coordinator.ts";
import { decodeJob, encodeTrajectory, type Job, runNames, unframe } from "./protocol.ts";
import { type Held, type VersionTimes, WeightCache } from "./weight_cache.ts";
import type { HalfWeights } from "./weights.ts";

export interface WorkerOptions {
  prefix: string;
  workerId: string;
  /** Jobs generated together in one batch at most (those already queued). Default 8. */
  batchJobs?: number;
  /** Stop after this many jobs (tests); default run until `signal` aborts. */
  maxJobs?: number;
  signal?: AbortSignal;
  /** Hears each finished job (the CLI's log line). */
  onJob?: (job: Job, seconds: number) => void;
  /** Hears each weights version built, with where its time went (the CLI's log line). */
  onWeights?: (version: number, times: VersionTimes) => void;
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
  /** Generate calls made (a group of jobs each). */
  generateCalls: number;
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

/** Runs jobs until `maxJobs` are done or `signal` aborts. */
export async function runWorker(nc: NatsConnection, o: WorkerOptions): Promise<WorkerStats> {
  const names = runNames(o.prefix);
  const js = jetstream(nc);
  const consumer = await js.consumers.get(names.jobStream, names.consumer);
  const os = await new Objm(nc).open(names.bucket);
  const stats: WorkerStats = { jobs: 0, dropped: 0, weightVersions: [], generateCalls: 0 };
  let run: RunContext | null = null;
  const weights = new WeightCache<CausalLM>(nc, names, {
    build: buildModel,
    dispose: (m) => m.dispose(),
    pollMs: o.watchWeightsMs ?? 200,
    onBuilt: (version, times) => {
      stats.weightVersions.push(version);
      o.onWeights?.(version, times);
    },
    log: o.log,
  });
  const batchJobs = Math.max(1, o.batchJobs ?? 8);
  try {
    while (!o.signal?.aborted && (o.maxJobs === undefined || stats.jobs < o.maxJobs)) {
      let first: JsMsg | null;
      try {
        first = await consumer.next({ expires: 1000 });
      } catch (e) {
        // The server restarting or the run's streams being recreated: wait and ask again.
        if (o.signal?.aborted) break;
        o.log?.(`worker ${o.workerId}: ${(e as Error).message}; retrying`);
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      if (!first) continue;
      const msgs = [first];
      // The first job's weights, taken before the jobs queued behind it: a trainer sends a step's
      // jobs together, often before their version is stored, and those that arrive while the
      // weights do join this generate call instead of waiting for a second round.
      let head: { key: string; got: Acquired | null } | null = null;
      try {
        const job = await decodeJob(first.data).catch(() => null);
        if (job) head = { key: groupKey(job), got: await weights.acquire(job.epoch, job.version) };
        // Jobs already waiting join the first one in a single generate call.
        const room = Math.min(batchJobs, (o.maxJobs ?? Infinity) - stats.jobs) - 1;
        const waiting = room > 0 ? (await consumer.info()).num_pending : 0;
        if (Math.min(room, waiting) > 0) {
          const more = await consumer.fetch({
            max_messages: Math.min(room, waiting),
            expires: 1000,
          });
          for await (const m of more) msgs.push(m);
        }
        const jobs: { msg: JsMsg; job: Job }[] = [];
        for (const msg of msgs) {
          try {
            jobs.push({ msg, job: await decodeJob(msg.data) });
          } catch (e) {
            o.log?.(`worker ${o.workerId}: refused a job: ${(e as Error).message}`);
            msg.term();
            stats.dropped++;
          }
        }
        if (run?.epoch !== jobs[0]?.job.epoch) run = await loadRun(os, o, jobs[0]?.job.epoch);
        // Jobs of one weights version and one sampling setting run together.
        const groups = new Map<string, { msg: JsMsg; job: Job }[]>();
        for (const j of jobs) {
          const key = groupKey(j.job);
          groups.set(key, [...(groups.get(key) ?? []), j]);
        }
        for (const [key, group] of groups) {
          const mine = head?.key === key ? head : null;
          if (mine) head = null; // released below by this group
          const got = mine
            ? mine.got
            : await weights.acquire(group[0].job.epoch, group[0].job.version);
          if (!got) {
            // The trainer no longer keeps this version: the jobs are stale.
            for (const { msg } of group) msg.term();
            stats.dropped += group.length;
            continue;
          }
          try {
            if (!run) continue;
            await runJobs(group, { ...run, held: got.held, waitS: got.waitS, js, o, names });
            stats.jobs += group.length;
            stats.generateCalls++;
          } finally {
            weights.release(got.held);
          }
        }
      } catch (e) {
        // A lost connection or a failed read: the jobs not yet answered go back to the queue now.
        if (o.signal?.aborted) break;
        o.log?.(`worker ${o.workerId}: ${(e as Error).message}; the jobs go back to the queue`);
        for (const m of msgs) m.nak();
      } finally {
        if (head?.got) weights.release(head.got.held);
      }
    }
  } finally {
    await weights.close();
  }
  return stats;
}

type Acquired = { held: Held<CausalLM>; waitS: number };

/** Jobs of one trainer process, weights version and sampling setting run in one generate call. */
const groupKey = (j: Job) =>
  JSON.stringify([j.epoch, j.version, j.n, j.responseLength, j.sampling]);

type RunContext = Omit<JobContext, "held" | "waitS" | "js" | "names" | "o"> & { epoch?: string };

/** The run info of the trainer process `epoch` (reloaded when a new trainer process starts). */
async function loadRun(os: ObjectStore, o: WorkerOptions, epoch?: string): Promise<RunContext> {
  const data = await os.getBlob("run");
  if (!data) throw new Error(`the run ${o.prefix} has no run info yet`);
  const info = await unframe(data, "run info") as RunInfo;
  if (info.rolloutDtype !== undefined && !["float32", "float16"].includes(info.rolloutDtype)) {
    throw new Error(`the run info's rolloutDtype ${info.rolloutDtype} is not float32 or float16`);
  }
  const tokenizer = tokenizerFromFiles(info.tokenizerFiles, { source: "run info" });
  const reward = info.reward ? new RewardManager({ tokenizer, log: o.log, ...info.reward }) : null;
  return { info, tokenizer, reward, epoch };
}

interface JobContext {
  info: RunInfo;
  tokenizer: Tokenizer;
  reward: RewardManager | null;
  held: Held<CausalLM>;
  /** Seconds the group waited for its weights version. */
  waitS: number;
  js: JetStreamClient;
  names: ReturnType<typeof runNames>;
  o: WorkerOptions;
}

/** Generates the group's jobs in one batch (prompts left-padded), then scores and publishes each. */
async function runJobs(group: { msg: JsMsg; job: Job }[], ctx: JobContext): Promise<void> {
  const t0 = performance.now();
  const first = group[0].job, B = group.length, n = first.n, R = first.responseLength;
  const P = Math.max(...group.map((g) => g.job.promptIds.length));
  const inputIds = new Int32Array(B * P).fill(ctx.tokenizer.padTokenId); // [B, P]
  const attentionMask = new Int32Array(B * P); // [B, P]
  group.forEach(({ job }, b) => {
    const L = job.promptIds.length;
    inputIds.set(job.promptIds, b * P + P - L);
    attentionMask.fill(1, b * P + P - L, b * P + P);
  });
  const out = await generate(ctx.held.model, {
    inputIds,
    attentionMask,
    batch: B,
    promptLength: P,
    n,
    responseLength: R,
    temperature: first.sampling.temperature,
    topK: first.sampling.topK,
    topP: first.sampling.topP,
    doSample: first.sampling.doSample,
    eosTokenIds: ctx.info.eosTokenIds,
    padTokenId: ctx.tokenizer.padTokenId,
    seed: first.seed,
    returnLogProbs: true,
    kvDtype: ctx.info.rolloutDtype === "float16" ? "f16" : "f32",
  });
  const rows = (a: Int32Array | Float32Array, b: number) => a.slice(b * n * R, (b + 1) * n * R);
  const scored = await ctx.reward?.score({
    responseIds: out.responses,
    responseMask: out.responseMask,
    responseLength: R,
    dataSources: group.flatMap(({ job }) => Array(n).fill(job.dataSource)),
    groundTruths: group.flatMap(({ job }) => Array(n).fill(job.groundTruth)),
    extraInfos: group.flatMap(({ job }) => Array(n).fill(job.extraInfo)),
  });
  const failed = new Set(scored?.failures.map((f) => Math.floor(f.index / n)));
  const seconds = (performance.now() - t0) / 1000;
  for (const [b, { msg, job }] of group.entries()) {
    const data = await encodeTrajectory({
      jobId: job.jobId,
      epoch: job.epoch,
      step: job.step,
      version: job.version,
      workerId: ctx.o.workerId,
      n,
      responseLength: R,
      responses: rows(out.responses, b) as Int32Array,
      responseMask: rows(out.responseMask, b) as Int32Array,
      logProbs: rows(out.logProbs!, b) as Float32Array,
      scores: !scored || failed.has(b) ? null : [...scored.scores.slice(b * n, (b + 1) * n)],
      genSeconds: seconds,
      deliveries: msg.info.deliveryCount,
      weightTimes: { ...ctx.held.times, waitS: ctx.waitS },
    });
    // Stored before the ack: a worker that dies in between leaves a duplicate, never a loss.
    await ctx.js.publish(ctx.names.traj, data);
    await msg.ackAck();
    ctx.o.onJob?.(job, seconds);
  }
}
