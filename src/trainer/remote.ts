/**
 * The trainer's side of `distributed.backend: nats`: turns a step's prompts into jobs (one per
 * prompt group), publishes weight versions, assembles the workers' trajectories into the gen
 * stage's batch, publishes later steps' jobs early when `max_staleness` allows, and checks
 * every trajectory against the trainer's own recomputation (log-probs and reward): a group that
 * disagrees is masked out of the update and counted against its worker.
 */
import { type Coordinator, defaultPrefix, type Trajectory } from "../distributed/mod.ts";
import type { PromptItem } from "../data/mod.ts";
import { type ModelConfig, serializeModelConfig } from "../io/mod.ts";
import { deriveSeed } from "../tensor/mod.ts";
import type { GenBatch, LogProbBatch } from "./batch.ts";
import type { RemoteGen, TrainerParts } from "./parts.ts";
import type { PeekLoader } from "./peek_loader.ts";

interface Provenance {
  workerId: string;
  scores: number[] | null;
}

export interface RemoteOptions {
  coordinator: Coordinator;
  modelConfig: ModelConfig;
  loader: PeekLoader;
  totalSteps: number;
}

export class RemoteRollout implements RemoteGen {
  readonly coordinator: Coordinator;
  #modelConfig: string;
  #loader: PeekLoader;
  #totalSteps: number;
  #version = -1;
  /** The newest version's publication (it runs while the trainer goes on). */
  #published: Promise<unknown> = Promise.resolve();
  #items = new Map<number, PromptItem[]>();
  #provenance = new Map<string, Provenance>();

  constructor(o: RemoteOptions) {
    this.coordinator = o.coordinator;
    this.#modelConfig = serializeModelConfig(o.modelConfig);
    this.#loader = o.loader;
    this.#totalSteps = o.totalSteps;
  }

  async close(): Promise<void> {
    await this.#published.catch(() => {});
    await this.coordinator.close();
  }

  /** Publishes the actor's weights as `version` (the weights after that step's update). */
  async publish(parts: TrainerParts, version: number): Promise<void> {
    await this.#published;
    const arrays = await parts.actor.model.toArrays();
    const published = this.coordinator.publishWeights(version, this.#modelConfig, arrays);
    // Awaited before the next jobs or publication; until then a failure must not go unhandled.
    published.catch(() => {});
    this.#published = published;
    this.#version = version;
  }

  /** Publishes the jobs of `step` under the newest weights. */
  async submit(parts: TrainerParts, step: number, items: PromptItem[], uidPrefix: string) {
    if (this.#version < 0) await this.publish(parts, step - 1);
    const cfg = parts.config.actor_rollout_ref.rollout;
    const seed = deriveSeed(parts.config.trainer.seed, step, 0);
    this.#items.set(step, items);
    await this.#published; // jobs name a version the workers can fetch
    await this.coordinator.submit(
      step,
      this.#version,
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

  /** Publishes jobs for the next `max_staleness` steps (their generation overlaps this update). */
  async prefetch(parts: TrainerParts, step: number): Promise<void> {
    const s = parts.config.distributed.max_staleness;
    for (let k = step + 1; k <= Math.min(step + s, this.#totalSteps); k++) {
      if (this.coordinator.isSubmitted(k)) continue;
      await this.submit(parts, k, this.#loader.peek(k - step - 1), `s${k}`);
    }
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
   * the trainer's: their samples get an all-zero response mask (no loss, no gradient).
   */
  verify(
    parts: TrainerParts,
    batch: LogProbBatch,
  ): { batch: LogProbBatch; metrics: Record<string, number> } {
    const d = parts.config.distributed, R = batch.responseLength;
    const bad = new Set<string>(), within = new Map<string, number>();
    let diffSum = 0, diffMax = 0, rows = 0;
    for (let b = 0; b < batch.size; b++) {
      const uid = batch.uid[b], prov = this.#provenance.get(uid);
      if (!prov || !batch.rolloutLogProbs) continue;
      const i = within.get(uid) ?? 0;
      within.set(uid, i + 1);
      let sum = 0, count = 0, score = 0;
      for (let t = 0; t < R; t++) {
        score += batch.tokenLevelScores[b * R + t];
        if (!batch.responseMask[b * R + t]) continue;
        const x = batch.rolloutLogProbs[b * R + t];
        sum += Number.isFinite(x) ? Math.abs(x - batch.oldLogProbs[b * R + t]) : Infinity;
        count++;
      }
      const diff = count ? sum / count : 0;
      diffSum += diff;
      diffMax = Math.max(diffMax, diff);
      rows++;
      const scoreBad = prov.scores !== null &&
        !(Math.abs(prov.scores[i] - score) <= d.reward_tolerance);
      if (!(diff <= d.logprob_tolerance) || scoreBad) bad.add(uid);
    }
    const metrics: Record<string, number> = {
      "distributed/logprob_diff/mean": rows ? diffSum / rows : 0,
      "distributed/logprob_diff/max": diffMax,
      "distributed/rejected_groups": bad.size,
    };
    for (const uid of bad) {
      const key = `distributed/rejected/${this.#provenance.get(uid)!.workerId}`;
      metrics[key] = (metrics[key] ?? 0) + 1;
    }
    if (bad.size === 0) return { batch, metrics };
    const responseMask = batch.responseMask.slice(), scores = batch.tokenLevelScores.slice();
    for (let b = 0; b < batch.size; b++) {
      if (!bad.has(batch.uid[b])) continue;
      responseMask.fill(0, b * R, b * R + R);
      scores.fill(0, b * R, b * R + R);
    }
    return { batch: { ...batch, responseMask, tokenLevelScores: scores }, metrics };
  }
}

/** The run's subject prefix: distributed.subject_prefix, else from project and experiment. */
export function subjectPrefix(parts: Pick<TrainerParts, "config">): string {
  const c = parts.config;
  return c.distributed.subject_prefix ??
    defaultPrefix(c.trainer.project_name, c.trainer.experiment_name);
}
