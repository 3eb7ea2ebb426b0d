/**
 * The controller's CheckpointStore over the browser's private file system: a save writes the
 * actor's (and critic's) weights and AdamW state, the step's extra state and the metrics so far;
 * a resume loads the optimizer states back and hands `fit()` the extra state (the weights were
 * loaded when the parts were built).
 */
import { checkpointArrays, type CheckpointStore, type TrainerParts } from "../src/trainer/mod.ts";
import type { Checkpoint, RunStore } from "./opfs.ts";
import type { MetricPoint } from "./protocol.ts";

export class OpfsCheckpoints implements CheckpointStore {
  #parts: TrainerParts | null = null;
  /** The step of the last checkpoint written (or resumed from); -1 when none. */
  savedStep = -1;

  constructor(
    readonly store: RunStore,
    readonly o: { history: MetricPoint[]; resume?: Checkpoint },
  ) {
    if (o.resume) this.savedStep = o.resume.step;
  }

  /** The parts to save from (they are built after this store). */
  attach(parts: TrainerParts): void {
    this.#parts = parts;
  }

  async save(step: number, extra: Record<string, unknown>): Promise<void> {
    const p = this.#parts;
    if (!p) throw new Error("checkpoint store used before the trainer's parts were attached");
    // A LoRA model saves its adapters (and the critic's value head), not the frozen base.
    const actor = await checkpointArrays(p.actor.model);
    const actorOptim = await p.actor.optimizer.adamw.state();
    const critic = p.critic ? await checkpointArrays(p.critic.model) : null;
    const criticOptim = p.critic ? await p.critic.optimizer.adamw.state() : null;
    for (const [name, values] of actor) {
      if (!values.every(Number.isFinite)) {
        throw new Error(`actor weights: ${name} holds NaN or Inf; refusing to save step ${step}`);
      }
    }
    await this.store.writeCheckpoint({
      step,
      actor,
      actorOptim,
      critic,
      criticOptim,
      extra,
      metrics: this.o.history.filter((m) => m.step <= step),
    });
    this.savedStep = step;
  }

  resume(): Promise<Record<string, unknown> | null> {
    const r = this.o.resume;
    const p = this.#parts;
    if (!r || !p) return Promise.resolve(null);
    p.actor.optimizer.adamw.loadState(r.actorOptim);
    if (p.critic) {
      if (!r.criticOptim) throw new Error("the saved run has no critic state to resume a critic");
      p.critic.optimizer.adamw.loadState(r.criticOptim);
    }
    return Promise.resolve({ ...r.extra });
  }
}
