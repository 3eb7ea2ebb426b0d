/**
 * The thread of a BackgroundPublisher (publisher.ts): its own NATS connection and a WeightPublisher
 * on the run's weights stream; publishes each version it is handed (f16, checksummed chunks), then
 * answers with where the time went, or the error, and hands the arrays' buffers back.
 */
/// <reference lib="deno.worker" />
import { connectNats, type ConnectOptions } from "./connect.ts";
import { runNames } from "./protocol.ts";
import { type PublishTimes, WeightPublisher } from "./weight_stream.ts";
import type { PackedWeights } from "./weights.ts";

export interface PublisherInit {
  url: string;
  connect: ConnectOptions;
  prefix: string;
  keepVersions: number;
}

export type PublishRequest = Omit<PackedWeights, "tensors"> & {
  tensors: [string, Float32Array | Uint16Array][];
};

export interface PublishReply {
  version: number;
  times?: PublishTimes;
  error?: string;
  /** The request's buffers, back for reuse. */
  buffers: ArrayBuffer[];
}

let ready: Promise<WeightPublisher> | null = null;

self.onmessage = (e: MessageEvent<{ init?: PublisherInit; publish?: PublishRequest }>) => {
  if (e.data.init) {
    const init = e.data.init;
    ready = (async () => {
      const nc = await connectNats(init.url, init.connect);
      return new WeightPublisher(nc, runNames(init.prefix), init.keepVersions);
    })();
    return;
  }
  const req = e.data.publish!;
  const buffers = [...new Set(req.tensors.map(([, t]) => t.buffer as ArrayBuffer))];
  const answer = (r: Omit<PublishReply, "version" | "buffers">) =>
    self.postMessage({ version: req.version, buffers, ...r }, buffers);
  ready!.then((p) => p.publish({ ...req, tensors: new Map(req.tensors) })).then(
    (times) => answer({ times }),
    (err) => answer({ error: String(err?.message ?? err) }),
  );
};
