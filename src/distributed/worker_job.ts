/**
 * One job on a worker (worker.ts): its n samples as n requests to the engine of its weights
 * version and sampling setting (identical prompt ids, so the engine prefills the prompt once),
 * then scored, published and acked as soon as its own samples are done, whatever else runs on
 * the engine. Sample j is drawn with seed mixSeed(job.seed, j) (submitPrompts: the rule of the
 * trainer's own engine rollout), so a sample's tokens depend on neither the other jobs nor the
 * worker. The trajectory's rows are `generate`'s layout (responseRows): tokens then pad, mask 1
 * through the EOS, the engine's log-probs of the sampled tokens and 0 after.
 */
import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { ObjectStore } from "@nats-io/obj";
import type { Tokenizer } from "../io/mod.ts";
import { tokenizerFromFiles } from "../io/mod.ts";
import { RewardManager } from "../reward/mod.ts";
import { responseRows, submitPrompts } from "../rollout/mod.ts";
import type { RunInfo } from "./coordinator.ts";
import { encodeTrajectory, type Job, type RunNames, unframe } from "./protocol.ts";
import type { Held } from "./weight_cache.ts";
import type { VersionEngines } from "./worker_engines.ts";

/** What a trainer process's jobs share: its run info, tokenizer and reward manager. */
export interface RunContext {
  epoch: string;
  info: RunInfo;
  tokenizer: Tokenizer;
  reward: RewardManager | null;
}

/** The run info of trainer process `epoch` (the bucket holds the newest process's). */
export async function loadRun(
  os: ObjectStore,
  o: { prefix: string; epoch: string; log?: (line: string) => void },
): Promise<RunContext> {
  const data = await os.getBlob("run");
  if (!data) throw new Error(`the run ${o.prefix} has no run info yet`);
  const info = await unframe(data, "run info") as RunInfo;
  if (info.rolloutDtype !== undefined && !["float32", "float16"].includes(info.rolloutDtype)) {
    throw new Error(`the run info's rolloutDtype ${info.rolloutDtype} is not float32 or float16`);
  }
  const tokenizer = tokenizerFromFiles(info.tokenizerFiles, { source: "run info" });
  const reward = info.reward ? new RewardManager({ tokenizer, log: o.log, ...info.reward }) : null;
  return { epoch: o.epoch, info, tokenizer, reward };
}

export interface JobContext {
  run: RunContext;
  held: Held<VersionEngines>;
  /** Seconds the job waited for its weights version. */
  waitS: number;
  /** Longest prompt of the jobs the worker holds (room for it when an engine is built). */
  longestPrompt: number;
  js: JetStreamClient;
  names: RunNames;
  workerId: string;
  /** Hears the engine requests submitted for the job. */
  onRequests: (n: number) => void;
}

/** Generates, scores and publishes `job`, then acks `msg`; returns the seconds it took. */
export async function runJob(msg: JsMsg, job: Job, ctx: JobContext): Promise<number> {
  const t0 = performance.now();
  const { run, held } = ctx, n = job.n, R = job.responseLength;
  const lease = held.model.acquire({
    sampling: job.sampling,
    kvDtype: run.info.rolloutDtype === "float16" ? "f16" : "f32",
    eosTokenIds: run.info.eosTokenIds,
    padTokenId: run.tokenizer.padTokenId,
    n,
    longest: Math.max(job.promptIds.length, ctx.longestPrompt) + R,
    run: run.info.engine,
  });
  let results;
  try {
    const submitted = submitPrompts(lease.engine, [job.promptIds], {
      n,
      maxTokens: R,
      seed: job.seed,
      returnLogProbs: true,
    });
    ctx.onRequests(n);
    [results] = await submitted;
  } finally {
    lease.release();
  }
  const rows = responseRows(results, {
    responseLength: R,
    padTokenId: run.tokenizer.padTokenId,
    logProbs: true,
  });
  const scored = await run.reward?.score({
    responseIds: rows.responses,
    responseMask: rows.responseMask,
    responseLength: R,
    dataSources: Array(n).fill(job.dataSource),
    groundTruths: Array(n).fill(job.groundTruth),
    extraInfos: Array(n).fill(job.extraInfo),
  });
  const seconds = (performance.now() - t0) / 1000;
  const data = await encodeTrajectory({
    jobId: job.jobId,
    epoch: job.epoch,
    step: job.step,
    version: job.version,
    workerId: ctx.workerId,
    n,
    responseLength: R,
    responses: rows.responses,
    responseMask: rows.responseMask,
    logProbs: rows.logProbs!,
    scores: !scored || scored.failures.length > 0 ? null : [...scored.scores],
    genSeconds: seconds,
    deliveries: msg.info.deliveryCount,
    weightTimes: { ...held.times, waitS: ctx.waitS },
  });
  // Stored before the ack: a worker that dies in between leaves a duplicate, never a loss.
  await ctx.js.publish(ctx.names.traj, data);
  await msg.ackAck();
  return seconds;
}
