/**
 * Inputs for tests of the decoder, critic and generation engine; production code never calls
 * these. Kept beside the tiny model (tiny_model.ts) they are fed to.
 */
import { mulberry32 } from "../tensor/mod.ts";

/**
 * Left-padded random prompts: `pads[b]` leading pad tokens (id 0, mask 0) in row b, then ids drawn
 * from [3, vocab), clear of the low special ids (pad 0, the test configs' EOS 2). ids/mask [B, T]
 */
export function leftPadded(
  batch: number,
  seqLen: number,
  pads: number[],
  vocab: number,
  seed: number,
): { ids: Int32Array; mask: Int32Array } {
  const r = mulberry32(seed);
  const ids = new Int32Array(batch * seqLen);
  const mask = new Int32Array(batch * seqLen);
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < seqLen; t++) {
      const real = t >= pads[b];
      mask[b * seqLen + t] = real ? 1 : 0;
      ids[b * seqLen + t] = real ? 3 + Math.floor(r() * (vocab - 3)) : 0;
    }
  }
  return { ids, mask };
}
