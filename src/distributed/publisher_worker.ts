/**
 * The thread of a BackgroundPublisher (publisher.ts): its own NATS connection, the run's weights
 * bucket; packs each version it is handed (f16, checksummed) and stores it, then answers with
 * the blob's size, or the error.
 */
/// <reference lib="deno.worker" />
import { Objm } from "@nats-io/obj";
import { connectNats, type ConnectOptions } from "./connect.ts";
import { runNames } from "./protocol.ts";
import { packWeights, WEIGHT_CHUNK } from "./weights.ts";

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

let ready: Promise<{ put(r: PublishRequest): Promise<number> }> | null = null;
const versions: number[] = [];

self.onmessage = (e: MessageEvent<{ init?: PublisherInit; publish?: PublishRequest }>) => {
  if (e.data.init) {
    const init = e.data.init;
    ready = (async () => {
      const nc = await connectNats(init.url, init.connect);
      const os = await new Objm(nc).open(runNames(init.prefix).bucket);
      return {
        put: async (r: PublishRequest) => {
          const blob = await packWeights({
            version: r.version,
            modelConfig: r.modelConfig,
            tensors: new Map(r.tensors),
          });
          await os.putBlob(
            { name: `v${r.version}`, options: { max_chunk_size: WEIGHT_CHUNK } },
            blob,
          );
          versions.push(r.version);
          while (versions.length > init.keepVersions) await os.delete(`v${versions.shift()}`);
          return blob.length;
        },
      };
    })();
    return;
  }
  const req = e.data.publish!;
  ready!.then((p) => p.put(req)).then(
    (bytes) => self.postMessage({ version: req.version, bytes }),
    (err) => self.postMessage({ version: req.version, error: String(err?.message ?? err) }),
  );
};
