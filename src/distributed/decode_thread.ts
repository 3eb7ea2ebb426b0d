/**
 * Decoding a weights version on a thread of its own (Deno): the thread stores and hashes each
 * chunk while this thread receives the next (and generates with the version it has), so the fetch
 * costs about the larger of the two instead of their sum. Each chunk is copied once and
 * transferred. Elsewhere (a browser tab) the chunks are decoded inline.
 */
import { ChecksumError } from "./protocol.ts";
import {
  checkPlan,
  type HalfWeights,
  WeightsDecoder,
  type WeightsManifest,
  type WeightsPlan,
} from "./weights.ts";

export interface DecodeReply {
  weights?: Omit<HalfWeights, "tensors"> & { tensors: [string, Uint16Array][] };
  decodeS?: number;
  error?: string;
  checksum?: boolean;
}

/** What fetchWeights feeds: a WeightsDecoder here or on a thread. */
export interface ChunkSink {
  add(data: Uint8Array): void;
  /** The weights and the seconds the decoder spent storing and hashing chunks. */
  finish(manifest: WeightsManifest): Promise<{ weights: HalfWeights; decodeS: number }>;
  /** Ends a thread left unfinished (a failed fetch). */
  close(): void;
}

/** Below this many bytes a thread costs more to start (about 0.15 s) than it saves. */
const THREAD_BYTES = 32 << 20;

/** A decoder on a thread of its own where Deno's Worker is there (and it pays), else inline. */
export function chunkDecoder(plan: WeightsPlan): ChunkSink {
  if (!("Deno" in globalThis) || plan.bytes < THREAD_BYTES) {
    const d = new WeightsDecoder(plan);
    return {
      add: (b) => d.add(b),
      finish: async (m) => ({ weights: await d.finish(m), decodeS: d.decodeS }),
      close: () => {},
    };
  }
  checkPlan(plan); // the plan's own checks, here
  const worker = new Worker(new URL("./decode_thread_worker.ts", import.meta.url), {
    type: "module",
  });
  const reply = new Promise<DecodeReply>((resolve) => {
    worker.onmessage = (e: MessageEvent<DecodeReply>) => resolve(e.data);
    worker.onerror = (e) => {
      e.preventDefault();
      resolve({ error: e.message });
    };
  });
  worker.postMessage({ plan });
  return {
    add(data) {
      const copy = new Uint8Array(data);
      worker.postMessage({ chunk: copy }, [copy.buffer]);
    },
    async finish(manifest) {
      worker.postMessage({ finish: manifest });
      const r = await reply;
      worker.terminate();
      if (!r.weights) {
        throw r.checksum ? new ChecksumError(r.error) : new Error(`weights: ${r.error}`);
      }
      return {
        weights: { ...r.weights, tensors: new Map(r.weights.tensors) },
        decodeS: r.decodeS!,
      };
    },
    close: () => worker.terminate(),
  };
}
