/**
 * Non-finite state is never trusted: weights are checked when a model folder is loaded (naming its
 * file and tensor) and before a checkpoint is written (naming the part and tensor), on the values
 * already read back from the GPU for saving.
 */
import { INDEX_FILE, parseShardIndex, SINGLE_FILE } from "../../io/mod.ts";

/** The first non-finite element of a set of named arrays. */
export interface NonFinite {
  tensor: string;
  index: number;
  value: number;
}

export class NonFiniteError extends Error {
  override name = "NonFiniteError";
}

/** The first NaN or ±Infinity among `arrays` (in their order), or null when all are finite. */
export function firstNonFinite(
  arrays: Iterable<[string, ArrayLike<number>]>,
): NonFinite | null {
  for (const [tensor, a] of arrays) {
    for (let i = 0; i < a.length; i++) {
      const v = a[i];
      // v - v is 0 for finite v and NaN for NaN and ±Infinity: one compare per element.
      if (v - v !== 0) return { tensor, index: i, value: v };
    }
  }
  return null;
}

export function describe(bad: NonFinite): string {
  return `tensor ${bad.tensor} holds ${bad.value} at element ${bad.index}`;
}

/** The safetensors file of a model folder that holds `tensor` (shards via the index file). */
function fileOf(folder: string, tensor: string): string {
  try {
    const path = `${folder}/${INDEX_FILE}`;
    const index = parseShardIndex(Deno.readTextFileSync(path), path);
    return `${folder}/${index.weight_map[tensor] ?? INDEX_FILE}`;
  } catch {
    return `${folder}/${SINGLE_FILE}`;
  }
}

/** Refuses a model folder whose weights hold NaN or ±Infinity, naming the file and tensor. */
export function checkFiniteWeights(folder: string, tensors: Map<string, Float32Array>): void {
  const bad = firstNonFinite(tensors);
  if (bad) {
    throw new NonFiniteError(
      `${fileOf(folder, bad.tensor)}: ${describe(bad)}; refusing to load non-finite weights`,
    );
  }
}
