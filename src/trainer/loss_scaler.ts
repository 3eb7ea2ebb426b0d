/**
 * Dynamic loss scaling for mixed precision, with torch.cuda.amp.GradScaler's semantics: the loss
 * is multiplied by `scale` before the backward (so small f16 gradients do not flush to zero); the
 * optimizer step divides the gradients by it before the grad norm and clipping. A step whose
 * gradients hold an inf or NaN is skipped (weights, AdamW moments and step count untouched) and
 * the scale is multiplied by `backoffFactor`; after `growthInterval` finite steps in a row it is
 * multiplied by `growthFactor`. The check is the grad norm's, read once per optimizer step with the
 * other metrics (optimizer_step.ts); nothing here touches the GPU.
 */

/** torch.cuda.amp.GradScaler's defaults. */
export const LOSS_SCALER_DEFAULTS = {
  initScale: 2 ** 16,
  growthFactor: 2,
  backoffFactor: 0.5,
  growthInterval: 2000,
} as const;

export type LossScalerOptions = { [K in keyof typeof LOSS_SCALER_DEFAULTS]?: number };

/** What a checkpoint keeps of a scaler (GradScaler's state_dict: scale and growth tracker). */
export interface LossScalerState {
  scale: number;
  goodSteps: number;
}

export class LossScaler {
  readonly growthFactor: number;
  readonly backoffFactor: number;
  readonly growthInterval: number;
  #scale: number;
  /** Finite steps in a row since the last change of the scale (GradScaler's growth tracker). */
  #good = 0;

  constructor(options: LossScalerOptions = {}) {
    const o = { ...LOSS_SCALER_DEFAULTS, ...options };
    const bad = (why: string) => new Error(`LossScaler: ${why}, got ${JSON.stringify(o)}`);
    if (!(o.initScale > 0) || !Number.isFinite(o.initScale)) throw bad("initScale must be > 0");
    if (!(o.growthFactor > 1)) throw bad("growthFactor must be > 1");
    if (!(o.backoffFactor > 0 && o.backoffFactor < 1)) throw bad("backoffFactor must be in (0, 1)");
    if (!Number.isInteger(o.growthInterval) || o.growthInterval < 1) {
      throw bad("growthInterval must be a positive integer");
    }
    this.#scale = o.initScale;
    this.growthFactor = o.growthFactor;
    this.backoffFactor = o.backoffFactor;
    this.growthInterval = o.growthInterval;
  }

  /** What the loss is multiplied by before the backward. */
  get scale(): number {
    return this.#scale;
  }

  /** What the accumulated gradients are multiplied by before the norm, the clip and AdamW. */
  get inverse(): number {
    return 1 / this.#scale;
  }

  /** Records one optimizer step: `finite` false (an inf or NaN gradient) means it was skipped. */
  update(finite: boolean): void {
    if (!finite) {
      this.#scale *= this.backoffFactor;
      this.#good = 0;
      return;
    }
    if (++this.#good >= this.growthInterval) {
      const grown = this.#scale * this.growthFactor;
      // GradScaler keeps the old scale when growth would overflow f32
      if (Number.isFinite(Math.fround(grown))) this.#scale = grown;
      this.#good = 0;
    }
  }

  state(): LossScalerState {
    return { scale: this.#scale, goodSteps: this.#good };
  }

  loadState(s: LossScalerState): void {
    if (!(s.scale > 0) || !Number.isFinite(s.scale) || !(s.goodSteps >= 0)) {
      throw new Error(`LossScaler: bad saved state ${JSON.stringify(s)}`);
    }
    this.#scale = s.scale;
    this.#good = s.goodSteps;
  }
}
