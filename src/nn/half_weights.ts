/**
 * The f16 copies of a model's f32 weights that mixed-precision passes multiply with (torch
 * autocast's weight cast): each copy is made on first use and kept while its weight's `version`
 * (bumped by every write to the weight: an AdamW step, a checkpoint load, any in-place op) stays
 * the one it was made at. So a copy is made once per optimizer step and shared by every
 * micro-batch (and by the backward) of that step, and a write that leaves AdamW's step count as it
 * was still makes the next pass cast again.
 */
import { cast, noGrad, type Tensor } from "../tensor/mod.ts";

export class HalfWeights {
  readonly #copies = new Map<Tensor, { copy: Tensor; version: number }>();

  /** The f16 copy of `w` (w itself when it is already f16). */
  get(w: Tensor): Tensor {
    if (w.dtype === "f16") return w;
    const held = this.#copies.get(w);
    if (held && held.version === w.version) return held.copy;
    held?.copy.dispose();
    const copy = noGrad(() => cast(w, "f16")).keep();
    this.#copies.set(w, { copy, version: w.version });
    return copy;
  }

  /** Copies held now (for tests and memory accounting). */
  get size(): number {
    return this.#copies.size;
  }

  /** Frees every copy; the next `get` casts again. */
  clear(): void {
    for (const c of this.#copies.values()) c.copy.dispose();
    this.#copies.clear();
  }
}
