/**
 * A rollout worker: pulls prompt jobs from the run's work queue, fetches the weights version a
 * job names (once; a worker that joins late starts from the version of its first job), generates
 * the job's n samples with their log-probs, scores them with the built-in reward functions and
 * publishes the trajectory before acking the job. A job whose weights version is gone (a trainer
 * that moved on or restarted) is dropped. The same code runs in Deno and in a browser tab.
 */
import { jetstream, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { Objm } from "@nats-io/obj";
import { parseModelConfig, tokenizerFromFiles } from "../io/mod.ts";
import type { Tokenizer } from "../io/mod.ts";
import { CausalLM } from "../nn/mod.ts";
import { RewardManager } from "../reward/mod.ts";
import { generate } from "../rollout/mod.ts";
import type { RunInfo } from "./coordinator.ts";
import { decodeJob, encodeTrajectory, type Job, runNames, unframe } from "./protocol.ts";
import { unpackWeights } from "./weights.ts";

export interface WorkerOptions {
  prefix: string;
  workerId: string;
  /** Stop after this many jobs (tests); default run until `signal` aborts. */
  maxJobs?: number;
  signal?: AbortSignal;
  /** Hears each finished job (the CLI's log line). */
  onJob?: (job: Job, seconds: number) => void;
  log?: (line: string) => void;
}

export interface WorkerStats {
  jobs: number;
  dropped: number;
  weightVersions: number[];
}

interface Loaded {
  version: number;
  model: CausalLM;
}

/** Runs jobs until `maxJobs` are done or `signal` aborts. */
export async function runWorker(nc: NatsConnection, o: WorkerOptions): Promise<WorkerStats> {
  const names = runNames(o.prefix);
  const js = jetstream(nc);
  const consumer = await js.consumers.get(names.jobStream, names.consumer);
  const os = await new Objm(nc).open(names.bucket);
  const stats: WorkerStats = { jobs: 0, dropped: 0, weightVersions: [] };
  let run: { info: RunInfo; tokenizer: Tokenizer; reward: RewardManager | null } | null = null;
  let loaded: Loaded | null = null;
  try {
    while (!o.signal?.aborted && (o.maxJobs === undefined || stats.jobs < o.maxJobs)) {
      const msg = await consumer.next({ expires: 1000 });
      if (!msg) continue;
      let job: Job;
      try {
        job = await decodeJob(msg.data);
      } catch (e) {
        o.log?.(`worker ${o.workerId}: refused a job: ${(e as Error).message}`);
        msg.term();
        stats.dropped++;
        continue;
      }
      if (!run) {
        const data = await os.getBlob("run");
        if (!data) throw new Error(`the run ${o.prefix} has no run info yet`);
        const info = await unframe(data, "run info") as RunInfo;
        const tokenizer = tokenizerFromFiles(info.tokenizerFiles, { source: "run info" });
        const reward = info.reward
          ? new RewardManager({ tokenizer, log: o.log, ...info.reward })
          : null;
        run = { info, tokenizer, reward };
      }
      if (loaded?.version !== job.version) {
        const data = await os.getBlob(`v${job.version}`);
        if (!data) {
          // The trainer no longer keeps this version: the job is stale.
          msg.term();
          stats.dropped++;
          continue;
        }
        const w = await unpackWeights(data);
        loaded?.model.dispose();
        loaded = {
          version: w.version,
          model: CausalLM.fromTensors(parseModelConfig(w.modelConfig), w.tensors),
        };
        stats.weightVersions.push(w.version);
      }
      await runJob(msg, job, { ...run, model: loaded.model, js, subject: names.traj, o });
      stats.jobs++;
    }
  } finally {
    loaded?.model.dispose();
  }
  return stats;
}

interface JobContext {
  info: RunInfo;
  tokenizer: Tokenizer;
  reward: RewardManager | null;
  model: CausalLM;
  js: JetStreamClient;
  subject: string;
  o: WorkerOptions;
}

async function runJob(
  msg: JsMsg,
  job: Job,
  ctx: JobContext,
): Promise<void> {
  const t0 = performance.now();
  const P = job.promptIds.length, R = job.responseLength;
  const out = await generate(ctx.model, {
    inputIds: Int32Array.from(job.promptIds),
    attentionMask: new Int32Array(P).fill(1),
    batch: 1,
    promptLength: P,
    n: job.n,
    responseLength: R,
    temperature: job.sampling.temperature,
    topK: job.sampling.topK,
    topP: job.sampling.topP,
    doSample: job.sampling.doSample,
    eosTokenIds: ctx.info.eosTokenIds,
    padTokenId: ctx.tokenizer.padTokenId,
    seed: job.seed,
    returnLogProbs: true,
  });
  const scored = await ctx.reward?.score({
    responseIds: out.responses,
    responseMask: out.responseMask,
    responseLength: R,
    dataSources: Array(job.n).fill(job.dataSource),
    groundTruths: Array(job.n).fill(job.groundTruth),
    extraInfos: Array(job.n).fill(job.extraInfo),
  });
  const seconds = (performance.now() - t0) / 1000;
  const data = await encodeTrajectory({
    jobId: job.jobId,
    epoch: job.epoch,
    step: job.step,
    version: job.version,
    workerId: ctx.o.workerId,
    n: job.n,
    responseLength: R,
    responses: out.responses,
    responseMask: out.responseMask,
    logProbs: out.logProbs!,
    scores: !scored || scored.failures.length ? null : [...scored.scores],
    genSeconds: seconds,
    deliveries: msg.info.deliveryCount,
  });
  // Stored before the ack: a worker that dies in between leaves a duplicate, never a loss.
  await ctx.js.publish(ctx.subject, data);
  await msg.ackAck();
  ctx.o.onJob?.(job, seconds);
}
