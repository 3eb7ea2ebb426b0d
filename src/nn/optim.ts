/**
 * AdamW over a list of parameters: state (m, v) on the GPU, one fused kernel per tensor, the clip
 * scale read from the GPU so clipping costs no readback. `state()` / `loadState()` move the
 * moments and step through typed arrays for checkpoints.
 */
import { gpu } from "../gpu/mod.ts";
import { type Tensor, zeroGrad } from "../tensor/mod.ts";
import { adamwStep } from "../tensor/mod.ts";
import { fill } from "../tensor/mod.ts";

export interface AdamWOptions {
  lr: number;
  betas: [number, number];
  eps: number;
  weightDecay: number;
}

export interface AdamWState {
  step: number;
  m: Float32Array[];
  v: Float32Array[];
}

export class AdamW {
  readonly m: Tensor[];
  readonly v: Tensor[];
  stepCount = 0;
  #ones: Tensor | null = null;

  constructor(readonly params: Tensor[], readonly options: AdamWOptions) {
    this.m = params.map((p) => fill(p.shape, 0, "adam_m").keep());
    this.v = params.map((p) => fill(p.shape, 0, "adam_v").keep());
  }

  /** One update of every parameter that has a gradient; `clip` is `[norm, scale]` from the GPU. */
  step(options: { lr?: number; clip?: Tensor } = {}): void {
    this.stepCount++;
    const clip = options.clip ?? (this.#ones ??= fill([2], 1, "no_clip").keep());
    this.params.forEach((p, i) => {
      if (!p.grad) return;
      adamwStep(p, p.grad, this.m[i], this.v[i], clip, {
        lr: options.lr ?? this.options.lr,
        beta1: this.options.betas[0],
        beta2: this.options.betas[1],
        eps: this.options.eps,
        weightDecay: this.options.weightDecay,
        step: this.stepCount,
      });
    });
  }

  /**
   * Takes back the count of the last `step`, whose kernels found a non-finite norm in `clip` and
   * left everything as it was: the next step's bias correction is then the one it would have had.
   */
  uncountStep(): void {
    if (this.stepCount === 0) throw new Error("AdamW.uncountStep: no step to take back");
    this.stepCount--;
  }

  zeroGrad(): void {
    zeroGrad(this.params);
  }

  async state(): Promise<AdamWState> {
    const list = [...this.m, ...this.v];
    const bytes = await gpu().read(list.map((t) => ({ buffer: t.buffer, size: t.byteSize })));
    const n = this.params.length;
    return {
      step: this.stepCount,
      m: bytes.slice(0, n).map((b) => new Float32Array(b)),
      v: bytes.slice(n).map((b) => new Float32Array(b)),
    };
  }

  loadState(state: AdamWState): void {
    const n = this.params.length;
    if (state.m.length !== n || state.v.length !== n) {
      throw new Error(`optimizer state holds ${state.m.length} tensors, the model has ${n}`);
    }
    this.params.forEach((p, i) => {
      if (state.m[i].length !== p.size || state.v[i].length !== p.size) {
        throw new Error(`optimizer state of parameter ${p.label}: size does not match ${p.size}`);
      }
      this.m[i].write(state.m[i]);
      this.v[i].write(state.v[i]);
    });
    this.stepCount = state.step;
  }

  dispose(): void {
    for (const t of [...this.m, ...this.v]) t.dispose();
    this.#ones?.dispose();
  }
}
