/**
 * The trainer's side of `distributed.backend: nats`: turns a step's prompts into jobs (one per
 * prompt group), publishes weight versions, assembles the workers' trajectories into the gen
 * stage's batch, publishes later steps' jobs early when `max_staleness` allows, and checks
 * every trajectory against the trainer's own recomputation (log-probs and reward): a group that
 * disagrees is masked out of the update and counted against its worker (in bypass mode the
 * log-probs are checked inside the update, remote_audit.ts).
 */
import { type Coordinator, defaultPrefix, type Trajectory } from "../distributed/mod.ts";
import type { PromptItem } from "../data/mod.ts";
import { type ModelConfig, serializeModelConfig } from "../io/mod.ts";
import { deriveSeed } from "../tensor/mod.ts";
import type { GenBatch, LogProbBatch } from "./batch.ts";
import type { RemoteGen, TrainerParts } from "./parts.ts";
import type { PeekLoader } from "./peek_loader.ts";
import { LogProbAudit, logProbDiff, RejectionTally } from "./remote_audit.ts";
import { WeightReadback } from "./remote_publish.ts";

interface Provenance {
  workerId: string;
  scores: number[] | null;
}

export interface RemoteOptions {
  coordinator: Coordinator;
  modelConfig: ModelConfig;
  loader: PeekLoader;
  totalSteps: number;
  /**
   * Convert the weights to f16 on the GPU before the readback (default where the GPU has
   * shader-f16); false: read f32 back and convert on the publishing thread.
   */
  castOnGpu?: boolean;
}

export class RemoteRollout implements RemoteGen {
  readonly coordinator: Coordinator;
  #modelConfig: string;
  #loader: PeekLoader;
  #totalSteps: number;
  #version = -1;
  /** The newest version's publication (it runs while the trainer goes on). */
  #published: Promise<unknown> = Promise.resolve();
  /** Jobs of later steps being published in the background (`prefetch`). */
  #prefetching: Promise<void> = Promise.resolve();
  /** No version uploaded yet (the first jobs wait for it). */
  #first = true;
  /**
   * Lets the newest version's readback map its staging buffer: after the next jobs are out
   * (prefetch), so the copy out of mapped memory runs while the update keeps the GPU busy;
   * anything that waits on the publication opens it first.
   */
  #openMap: () => void = () => {};
  #items = new Map<number, PromptItem[]>();
  #provenance = new Map<string, Provenance>();
  #tally = new RejectionTally();
  #readback: WeightReadback | null = null;
  #castOnGpu?: boolean;

  constructor(o: RemoteOptions) {
    this.coordinator = o.coordinator;
    this.#modelConfig = serializeModelConfig(o.modelConfig);
    this.#loader = o.loader;
    this.#totalSteps = o.totalSteps;
    this.#castOnGpu = o.castOnGpu;
  }

  async close(): Promise<void> {
    this.#openMap();
    await this.#prefetching.catch(() => {});
    await this.#published.catch(() => {});
    await this.coordinator.close();
    this.#readback?.dispose();
  }

  /**
   * Publishes the actor's weights as `version` (the weights after that step's update). The copies
   * into a staging buffer are recorded now, in queue order, so later updates cannot change what is
   * published; the readback and the upload finish in the background while the trainer goes on
   * (the jobs that name this version wait for them).
   */
  publish(parts: TrainerParts, version: number): Promise<void> {
    if (!this.#readback) {
      this.#readback = new WeightReadback(this.#castOnGpu);
      const readback = this.#readback;
      this.coordinator.recycle = (buffers) => readback.recycle(buffers);
    }
    this.#openMap(); // an earlier version's readback, if still gated
    const mapAfter = new Promise<void>((resolve) => (this.#openMap = resolve));
    const arrays = this.#readback.read(parts.actor.model.params(), { mapAfter });
    arrays.catch(() => {}); // surfaced through `published`
    const previous = this.#published;
    const published = (async () => {
      await previous;
      const { tensors, seconds } = await arrays;
      return await this.coordinator.publishWeights(version, this.#modelConfig, tensors, {
        transfer: true,
        readbackS: seconds,
      });
    })();
    // Awaited before the next jobs or publication; until then a failure must not go unhandled.
    published.catch(() => {});
    this.#published = published;
    this.#version = version;
    return Promise.resolve();
  }

  published(): Promise<void> {
    this.#openMap();
    return this.#published.then(() => {});
  }

  /** Publishes the jobs of `step` under the newest weights. */
  async submit(parts: TrainerParts, step: number, items: PromptItem[], uidPrefix: string) {
    if (this.#version < 0) await this.publish(parts, step - 1);
    const cfg = parts.config.actor_rollout_ref.rollout;
    const seed = deriveSeed(parts.config.trainer.seed, step, 0);
    this.#items.set(step, items);
    // Jobs go out while their version is still being read back and stored: a worker waits for
    // a version its trainer has not announced yet (WeightCache), so generation starts as soon as
    // the weights land. Only a run's first version is awaited, as workers take a trainer process
    // they have seen no weights from for a stale one.
    const version = this.#version;
    if (this.#first) {
      this.#openMap();
      await this.#published;
      this.#first = false;
    }
    await this.coordinator.submit(
      step,
      version,
      items.map((it, j) => ({
        jobId: `${uidPrefix}-${it.index}`,
        promptIds: it.inputIds,
        n: cfg.n,
        responseLength: parts.config.data.max_response_length,
        sampling: {
          temperature: cfg.temperature,
          topK: cfg.top_k,
          topP: cfg.top_p,
          doSample: cfg.do_sample,
        },
        seed: deriveSeed(seed, j),
        dataSource: it.dataSource,
        groundTruth: it.groundTruth,
        extraInfo: it.extraInfo,
      })),
    );
  }

  /**
   * Publishes jobs for the next `max_staleness` steps (their generation overlaps this update)
   * and returns once they are out (a few ms): publishing needs the event loop, which the
   * update's recording yields only once per micro-batch, so jobs left to the background would
   * reach the workers late. The newest weights' readback is not waited for: it lands at the
   * update's first yield, while the GPU runs the first micro-batch. Errors surface in the next
   * `gen`.
   */
  prefetch(parts: TrainerParts, step: number): Promise<void> {
    const s = parts.config.distributed.max_staleness;
    // The prompts are taken now, while the loader still stands at this step.
    const later: [number, PromptItem[]][] = [];
    for (let k = step + 1; k <= Math.min(step + s, this.#totalSteps); k++) {
      later.push([k, this.#loader.peek(k - step - 1)]);
    }
    const run = async () => {
      for (const [k, items] of later) {
        if (!this.coordinator.isSubmitted(k)) await this.submit(parts, k, items, `s${k}`);
      }
      this.#openMap();
    };
    this.#prefetching = this.#prefetching.then(run);
    const prefetching = this.#prefetching.catch(() => {}); // surfaced by the next `gen`
    return prefetching;
  }

  /** The gen stage of `step`: its jobs' trajectories as a batch (submitting them if not yet). */
  async gen(
    parts: TrainerParts,
    items: PromptItem[],
    o: { step: number; uidPrefix: string; genBatch: number },
  ): Promise<{ batch: GenBatch; metrics: Record<string, number> }> {
    // Dynamic sampling's extra batches (k > 1) get step numbers of their own on the wire.
    const key = o.genBatch > 1 ? o.step * 1000 + o.genBatch : o.step;
    const early = this.#items.get(key);
    if (early && early.map((it) => it.index).join() !== items.map((it) => it.index).join()) {
      throw new Error(`step ${o.step}: the prompts published early differ from the loader's`);
    }
    this.#openMap();
    await this.#prefetching;
    if (!this.coordinator.isSubmitted(key)) await this.submit(parts, key, items, o.uidPrefix);
    const { trajectories, metrics } = await this.coordinator.collect(key);
    this.#items.delete(key);
    metrics["distributed/staleness/max"] = Math.max(
      ...trajectories.map((t) => this.#version - t.version),
    );
    return { batch: this.#assemble(parts, items, trajectories, o.uidPrefix), metrics };
  }

  #assemble(
    parts: TrainerParts,
    items: PromptItem[],
    trajectories: Trajectory[],
    uidPrefix: string,
  ): GenBatch {
    const n = parts.config.actor_rollout_ref.rollout.n, R = parts.config.data.max_response_length;
    const B = items.length * n, P = Math.max(1, ...items.map((it) => it.inputIds.length));
    const prompts = new Int32Array(B * P).fill(parts.tokenizer.padTokenId); // [B, P]
    const promptMask = new Int32Array(B * P); // [B, P]
    const responses = new Int32Array(B * R); // [B, R]
    const responseMask = new Int32Array(B * R); // [B, R]
    const logProbs = new Float32Array(B * R); // [B, R]
    this.#provenance.clear();
    items.forEach((it, j) => {
      const t = trajectories[j];
      if (t.n !== n || t.responseLength !== R) {
        throw new Error(
          `trajectory ${t.jobId} holds [${t.n}, ${t.responseLength}], want [${n}, ${R}]`,
        );
      }
      this.#provenance.set(`${uidPrefix}-${it.index}`, { workerId: t.workerId, scores: t.scores });
      for (let i = 0; i < n; i++) {
        const b = j * n + i, L = it.inputIds.length;
        prompts.set(it.inputIds, b * P + P - L);
        promptMask.fill(1, b * P + P - L, b * P + P);
      }
      responses.set(t.responses, j * n * R);
      responseMask.set(t.responseMask, j * n * R);
      logProbs.set(t.logProbs, j * n * R);
    });
    const rep = <T>(xs: T[]) => xs.flatMap((x) => Array<T>(n).fill(x));
    return {
      size: B,
      promptLength: P,
      responseLength: R,
      uid: rep(items.map((it) => `${uidPrefix}-${it.index}`)),
      dataSource: rep(items.map((it) => it.dataSource)),
      groundTruth: rep(items.map((it) => it.groundTruth)),
      extraInfo: rep(items.map((it) => it.extraInfo)),
      prompts,
      promptMask,
      responses,
      responseMask,
      rolloutLogProbs: logProbs,
    };
  }

  /**
   * Rejects groups whose rollout log-probs stray from the recomputed ones by more than
   * `logprob_tolerance` (mean |diff| over a sample's tokens) or whose worker's scores differ from
   * the trainer's: their samples get an all-zero response mask (no loss, no gradient). In bypass
   * mode (no recomputed log-probs: `batch.oldLogProbs` are the rollout's) only the scores are
   * checked here; `audit` checks the log-probs inside the actor update.
   */
  verify(
    parts: TrainerParts,
    batch: LogProbBatch,
  ): { batch: LogProbBatch; metrics: Record<string, number> } {
    const d = parts.config.distributed, R = batch.responseLength;
    const bypass = parts.config.algorithm.rollout_correction.bypass_mode;
    const tally = new RejectionTally();
    this.#tally = tally;
    const within = new Map<string, number>();
    for (let b = 0; b < batch.size; b++) {
      const uid = batch.uid[b], prov = this.#provenance.get(uid);
      if (!prov || !batch.rolloutLogProbs) continue;
      const i = within.get(uid) ?? 0;
      within.set(uid, i + 1);
      let score = 0;
      for (let t = 0; t < R; t++) score += batch.tokenLevelScores[b * R + t];
      const scoreBad = prov.scores !== null &&
        !(Math.abs(prov.scores[i] - score) <= d.reward_tolerance);
      let diffBad = false;
      if (!bypass) {
        const old = batch.oldLogProbs;
        const diff = logProbDiff(
          batch.rolloutLogProbs,
          batch.responseMask,
          R,
          b,
          (t) => old[b * R + t],
        );
        tally.diff(diff);
        diffBad = !(diff <= d.logprob_tolerance);
      }
      if (diffBad || scoreBad) tally.reject(uid, prov.workerId);
    }
    const metrics = tally.metrics(!bypass), bad = tally.rejected;
    if (bad.size === 0) return { batch, metrics };
    const responseMask = batch.responseMask.slice(), scores = batch.tokenLevelScores.slice();
    for (let b = 0; b < batch.size; b++) {
      if (!bad.has(batch.uid[b])) continue;
      responseMask.fill(0, b * R, b * R + R);
      scores.fill(0, b * R, b * R + R);
    }
    return { batch: { ...batch, responseMask, tokenLevelScores: scores }, metrics };
  }

  /**
   * Bypass mode: the check of the workers' log-probs against the current policy's inside the actor
   * update, counting on from this step's `verify`.
   */
  audit(parts: TrainerParts, batch: GenBatch): LogProbAudit {
    return new LogProbAudit(batch, {
      workerOf: (uid) => this.#provenance.get(uid)?.workerId,
      tolerance: parts.config.distributed.logprob_tolerance,
      tally: this.#tally,
    });
  }
}

/** The run's subject prefix: distributed.subject_prefix, else from project and experiment. */
export function subjectPrefix(parts: Pick<TrainerParts, "config">): string {
  const c = parts.config;
  return c.distributed.subject_prefix ??
    defaultPrefix(c.trainer.project_name, c.trainer.experiment_name);
}
