/**
 * Weight versions on a JetStream stream of the run (`P_WEIGHTS`, subjects `p.weights.>`): version
 * `v` is its f16 chunks on `p.weights.<v>.data` (one message each, up to the server's
 * max_payload) followed by its framed manifest on `p.weights.<v>.head` (weights.ts), published
 * once every chunk is stored. A worker reads the manifest (direct get, last message of the
 * subject) and then each chunk by its sequence (direct gets, 16 MiB in flight); no consumer, no
 * hashing in JavaScript. The newest `keepVersions` versions stay; older ones are purged.
 */
import {
  jetstream,
  type JetStreamManager,
  jetstreamManager,
  type PubAck,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { ChecksumError, frame, type RunNames, sha256Hex, unframe } from "./protocol.ts";
import {
  encodeWeights,
  type PackedWeights,
  weightChunkBytes,
  type WeightsManifest,
} from "./weights.ts";
import { chunkDecoder } from "./decode_thread.ts";

/**
 * Bytes of chunks in flight at once, publishing or fetching: a fetch's answers queue at the server
 * for this client, which a server drops as a slow consumer past its max_pending (64 MB default).
 */
const IN_FLIGHT_BYTES = 16 << 20;
/**
 * Seconds a chunk's publish ack or direct get may take: on a slow link IN_FLIGHT_BYTES travel ahead
 * of the last chunk (16 MiB at 10 Mb/s: 13 s).
 */
const TIMEOUT_S = 60;

const windowOf = (chunkBytes: number) => Math.max(1, Math.floor(IN_FLIGHT_BYTES / chunkBytes));

const dataSubject = (n: RunNames, version: number) => `${n.weights}.${version}.data`;
const headSubject = (n: RunNames, version: number) => `${n.weights}.${version}.head`;

/** Creates the run's weights stream if missing, and empties it. */
export async function resetWeightStream(jsm: JetStreamManager, n: RunNames): Promise<void> {
  try {
    await jsm.streams.info(n.weightStream);
  } catch {
    await jsm.streams.add({
      name: n.weightStream,
      subjects: [`${n.weights}.>`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      allow_direct: true,
    });
  }
  await jsm.streams.purge(n.weightStream);
}

/** Publishes weight versions over one connection, keeping the newest `keepVersions`. */
export class WeightPublisher {
  #versions: number[] = [];

  constructor(
    private readonly nc: NatsConnection,
    private readonly names: RunNames,
    private readonly keepVersions: number,
    /** Bytes per chunk; default from the server's max_payload (4 MiB at most). */
    private readonly chunkBytes = weightChunkBytes(nc.info?.max_payload ?? 1 << 20),
  ) {}

  /** Publishes `w` (f16) and purges versions older than the newest `keepVersions`; its bytes. */
  async publish(w: PackedWeights): Promise<number> {
    const js = jetstream(this.nc), n = this.names, subject = dataSubject(n, w.version);
    const inFlight = windowOf(this.chunkBytes);
    const acks: Promise<PubAck>[] = [], digests: Promise<string>[] = [];
    const layout = await encodeWeights(w.tensors, this.chunkBytes, async (i, bytes) => {
      digests.push(sha256Hex(bytes));
      if (i >= inFlight) await acks[i - inFlight];
      const ack = js.publish(subject, bytes, { timeout: TIMEOUT_S * 1000 });
      ack.catch(() => {}); // awaited below; a failure must not go unhandled meanwhile
      acks.push(ack);
    });
    const seqs = (await Promise.all(acks)).map((a) => a.seq), shas = await Promise.all(digests);
    const manifest: WeightsManifest = {
      version: w.version,
      modelConfig: w.modelConfig,
      ...layout,
      chunkBytes: this.chunkBytes,
      chunks: seqs.map((seq, i) => ({ seq, sha256: shas[i] })),
    };
    await js.publish(headSubject(n, w.version), await frame(manifest));
    this.#versions.push(w.version);
    const jsm = await jetstreamManager(this.nc, { checkAPI: false });
    while (this.#versions.length > this.keepVersions) {
      const old = this.#versions.shift()!;
      await jsm.streams.purge(n.weightStream, { filter: `${n.weights}.${old}.>` });
    }
    return layout.bytes;
  }
}

/**
 * Fetches weights `version` as f32 tensors; null when the stream no longer holds it. A chunk or
 * manifest whose digest does not match is a ChecksumError.
 */
export async function fetchWeights(
  nc: NatsConnection,
  n: RunNames,
  version: number,
): Promise<PackedWeights | null> {
  const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: TIMEOUT_S * 1000 });
  const head = await jsm.direct.getMessage(n.weightStream, {
    last_by_subj: headSubject(n, version),
  });
  if (!head) return null;
  const m = await unframe(head.data, `weights v${version} manifest`) as WeightsManifest;
  const decoder = chunkDecoder(m), inFlight = windowOf(m.chunkBytes);
  const subject = dataSubject(n, version);
  const gets: Promise<{ subject: string; data: Uint8Array } | null>[] = [];
  try {
    for (let i = 0; i < m.chunks.length; i++) {
      while (gets.length < Math.min(m.chunks.length, i + inFlight)) {
        const get = jsm.direct.getMessage(n.weightStream, { seq: m.chunks[gets.length].seq });
        get.catch(() => {}); // awaited in order below
        gets.push(get);
      }
      const msg = await gets[i];
      if (!msg) return null; // purged while we read: the trainer moved on
      if (msg.subject !== subject) {
        throw new ChecksumError(`weights v${version}: chunk ${i} is a message of ${msg.subject}`);
      }
      decoder.add(msg.data);
    }
    return await decoder.finish();
  } finally {
    decoder.close();
  }
}
