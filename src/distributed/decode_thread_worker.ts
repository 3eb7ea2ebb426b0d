/** The thread of decode_thread.ts: a WeightsDecoder fed chunk by chunk. */
/// <reference lib="deno.worker" />
import type { DecodeReply } from "./decode_thread.ts";
import { ChecksumError } from "./protocol.ts";
import { WeightsDecoder, type WeightsManifest, type WeightsPlan } from "./weights.ts";

let decoder: WeightsDecoder | null = null;
let failed: Error | null = null;

const reply = (r: DecodeReply, transfer: Transferable[] = []) => self.postMessage(r, transfer);

self.onmessage = (
  e: MessageEvent<{ plan?: WeightsPlan; chunk?: Uint8Array; finish?: WeightsManifest }>,
) => {
  try {
    if (e.data.plan) decoder = new WeightsDecoder(e.data.plan);
    else if (e.data.chunk && !failed) decoder!.add(e.data.chunk);
  } catch (err) {
    failed = err as Error;
  }
  if (!e.data.finish) return;
  const fail = (err: Error) =>
    reply({ error: err.message, checksum: err instanceof ChecksumError });
  if (failed) return fail(failed);
  decoder!.finish(e.data.finish).then((w) => {
    const tensors = [...w.tensors];
    const buffer = tensors[0]?.[1].buffer as ArrayBuffer | undefined;
    reply({ weights: { ...w, tensors }, decodeS: decoder!.decodeS }, buffer ? [buffer] : []);
  }, fail);
};
