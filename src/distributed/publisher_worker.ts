/**
 * The thread of a BackgroundPublisher (publisher.ts): its own NATS connection and a WeightPublisher
 * on the run's weights stream; publishes each version it is handed (f16, checksummed chunks), then
 * answers with its bytes, or the error.
 */
/// <reference lib="deno.worker" />
import { connectNats, type ConnectOptions } from "./connect.ts";
import { runNames } from "./protocol.ts";
import { WeightPublisher } from "./weight_stream.ts";

export interface PublisherInit {
  url: string;
  connect: ConnectOptions;
  prefix: string;
  keepVersions: number;
}

export interface PublishRequest {
  version: number;
  modelConfig: string;
  tensors: [string, Float32Array][];
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
  ready!.then((p) => p.publish({ ...req, tensors: new Map(req.tensors) })).then(
    (bytes) => self.postMessage({ version: req.version, bytes }),
    (err) => self.postMessage({ version: req.version, error: String(err?.message ?? err) }),
  );
};
