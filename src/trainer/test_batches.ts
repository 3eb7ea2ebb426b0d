/** Test batches: the per-sample fields of a batch that carries no metadata. */
import type { GenBatch } from "./batch.ts";

type Bare = Pick<
  GenBatch,
  "size" | "promptLength" | "responseLength" | "uid" | "dataSource" | "groundTruth" | "extraInfo"
>;

/** B samples of P prompt and R response tokens without uids, sources, answers or extras. */
export function bareSamples(B: number, P: number, R: number): Bare {
  return {
    size: B,
    promptLength: P,
    responseLength: R,
    uid: [],
    dataSource: [],
    groundTruth: [],
    extraInfo: [],
  };
}
