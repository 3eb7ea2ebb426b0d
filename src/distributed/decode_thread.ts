/**
 * Decoding a weights version on a thread of its own (Deno): the thread hashes and converts each
 * chunk while this thread receives the next, so the fetch costs about the larger of the two
 * instead of their sum. Each chunk is copied once and transferred. Elsewhere (a browser tab) the
 * chunks are decoded inline.
 */
import { ChecksumError } from "./protocol.ts";
import { type PackedWeights, WeightsDecoder, type WeightsManifest } from "./weights.ts";

export interface DecodeReply {
  weights?: { version: number; modelConfig: string; tensors: [string, Float32Array][] };
  error?: string;
  checksum?: boolean;
}

/** What fetchWeights feeds: a WeightsDecoder here or on a thread. */
export interface ChunkSink {
  add(data: Uint8Array): void;
  finish(): Promise<PackedWeights>;
  /** Ends a thread left unfinished (a failed fetch). */
  close(): void;
}

/** A decoder on a thread of its own where Deno's Worker is there, else inline. */
export function chunkDecoder(manifest: WeightsManifest): ChunkSink {
  if (!("Deno" in globalThis)) {
    const d = new WeightsDecoder(manifest);
    return { add: (b) => d.add(b), finish: () => d.finish(), close: () => {} };
  }
  new WeightsDecoder({ ...manifest, bytes: 0, chunks: [] }); // the manifest's own checks, here
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
  worker.postMessage({ manifest });
  return {
    add(data) {
      const copy = new Uint8Array(data);
      worker.postMessage({ chunk: copy }, [copy.buffer]);
    },
    async finish() {
      worker.postMessage({ finish: true });
      const r = await reply;
      worker.terminate();
      if (!r.weights) {
        throw r.checksum ? new ChecksumError(r.error) : new Error(`weights: ${r.error}`);
      }
      return { ...r.weights, tensors: new Map(r.weights.tensors) };
    },
    close: () => worker.terminate(),
  };
}
