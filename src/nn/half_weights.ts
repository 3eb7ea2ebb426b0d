/**
 * The f16 copies of a model's f32 weights that mixed-precision passes multiply with (torch
 * autocast's weight cast): each copy is made on first use and kept until `version` changes, which
 * the trainer ties to the optimizer's step count, so a copy is made once per optimizer step and
 * shared by every micro-batch (and by the backward) of that step.
 */
import { cast, noGrad, type Tensor } from "../tensor/mod.ts";

export class HalfWeights {
  readonly #copies = new Map<Tensor, Tensor>();
  #at: number;

  /** `version` changes whenever the masters do (e.g. () => adamw.stepCount). */
  constructor(readonly version: () => number = () => 0) {
    this.#at = version();
  }

  /** The f16 copy of `w` (w itself when it is already f16). */
  get(w: Tensor): Tensor {
    if (w.dtype === "f16") return w;
    const now = this.version();
    if (now !== this.#at) {
      this.clear();
      this.#at = now;
    }
    let c = this.#copies.get(w);
    if (!c) {
      c = noGrad(() => cast(w, "f16")).keep();
      this.#copies.set(w, c);
    }
    return c;
  }

  /** Copies held now (for tests and memory accounting). */
  get size(): number {
    return this.#copies.size;
  }

  /** Frees every copy; the next `get` casts again. */
  clear(): void {
    for (const c of this.#copies.values()) c.dispose();
    this.#copies.clear();
  }
}
