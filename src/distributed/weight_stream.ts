/**
 * Weight versions on a JetStream stream of the run (`P_WEIGHTS`, subjects `p.weights.>`): version
 * `v` is announced by its framed plan on `p.weights.<v>.plan` (weights.ts), then travels as f16
 * chunks on `p.weights.<v>.data` (one message each, up to the server's max_payload), and is closed
 * by its framed manifest on `p.weights.<v>.head` once every chunk is stored. A worker learns of
 * versions from the plans (`latestPlan`: direct gets of the next plan after the last one seen), and
 * reads a version's chunks while they are still being stored: direct gets of the next data message
 * of the version after the previous chunk (16 MiB in flight), each chunk's digest and sequence
 * checked against the manifest at the end. No consumer, no hashing in JavaScript. The newest
 * `keepVersions` versions stay; older ones are purged.
 */
import {
  jetstream,
  type JetStreamManager,
  jetstreamManager,
  type PubAck,
  RetentionPolicy,
  StorageType,
  type StoredMsg,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { ChecksumError, frame, type RunNames, sha256Hex, unframe } from "./protocol.ts";
import {
  encodeWeights,
  type HalfWeights,
  type PackedWeights,
  weightChunkBytes,
  weightsLayout,
  type WeightsManifest,
  type WeightsPlan,
} from "./weights.ts";
import { chunkDecoder } from "./decode_thread.ts";

/**
 * Bytes of chunks in flight at once, publishing or fetching: a fetch's answers queue at the server
 * for this client, which a server drops as a slow consumer past its max_pending (64 MB default).
 */
const IN_FLIGHT_BYTES = 16 << 20;
/**
 * Seconds a chunk's publish ack or direct get may take, and a fetch may wait for the next chunk of
 * a version being published: on a slow link IN_FLIGHT_BYTES travel ahead of the last chunk (16 MiB
 * at 10 Mb/s: 13 s).
 */
const TIMEOUT_S = 60;
/** Milliseconds between asks for a chunk or manifest not stored yet. */
const POLL_MS = 5;

const windowOf = (chunkBytes: number) => Math.max(1, Math.floor(IN_FLIGHT_BYTES / chunkBytes));

const planSubject = (n: RunNames, version: number | "*") => `${n.weights}.${version}.plan`;
const dataSubject = (n: RunNames, version: number) => `${n.weights}.${version}.data`;
const headSubject = (n: RunNames, version: number) => `${n.weights}.${version}.head`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

/** Where a publication's time went: f16 conversion (or copy), and the whole store. */
export interface PublishTimes {
  bytes: number;
  /** Seconds converting to f16 (f32 input) or copying (f16 input), inside `uploadS`. */
  encodeS: number;
  /** Seconds from the plan to the stored manifest. */
  uploadS: number;
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

  /** Publishes `w` as f16 and purges versions older than the newest `keepVersions`. */
  async publish(w: PackedWeights): Promise<PublishTimes> {
    const t0 = performance.now();
    const js = jetstream(this.nc), n = this.names, subject = dataSubject(n, w.version);
    const layout = weightsLayout(w.tensors);
    const plan: WeightsPlan = {
      version: w.version,
      epoch: w.epoch ?? "",
      modelConfig: w.modelConfig,
      ...layout,
      chunkBytes: this.chunkBytes,
      chunkCount: Math.ceil(layout.bytes / this.chunkBytes),
    };
    await js.publish(planSubject(n, w.version), await frame(plan));
    const inFlight = windowOf(this.chunkBytes);
    const acks: Promise<PubAck>[] = [], digests: Promise<string>[] = [];
    const { convertS } = await encodeWeights(w.tensors, this.chunkBytes, async (i, bytes) => {
      digests.push(sha256Hex(bytes));
      if (i >= inFlight) await acks[i - inFlight];
      const ack = js.publish(subject, bytes, { timeout: TIMEOUT_S * 1000 });
      ack.catch(() => {}); // awaited below; a failure must not go unhandled meanwhile
      acks.push(ack);
    });
    const seqs = (await Promise.all(acks)).map((a) => a.seq), shas = await Promise.all(digests);
    const manifest: WeightsManifest = {
      ...plan,
      chunks: seqs.map((seq, i) => ({ seq, sha256: shas[i] })),
    };
    await js.publish(headSubject(n, w.version), await frame(manifest));
    const uploadS = (performance.now() - t0) / 1000;
    this.#versions.push(w.version);
    const jsm = await jetstreamManager(this.nc, { checkAPI: false });
    while (this.#versions.length > this.keepVersions) {
      const old = this.#versions.shift()!;
      await jsm.streams.purge(n.weightStream, { filter: `${n.weights}.${old}.>` });
    }
    return { bytes: layout.bytes, encodeS: convertS, uploadS };
  }
}

/** A version's plan and its stream sequence (chunks come after it). */
export interface PlanAt {
  seq: number;
  plan: WeightsPlan;
}

const directOf = (nc: NatsConnection) =>
  jetstreamManager(nc, { checkAPI: false, timeout: TIMEOUT_S * 1000 });

async function readPlan(msg: StoredMsg): Promise<PlanAt> {
  const plan = await unframe(msg.data, `weights plan ${msg.subject}`) as WeightsPlan;
  return { seq: msg.seq, plan };
}

/** The newest plan stored after sequence `after` (null: none since), for workers to watch. */
export async function latestPlan(
  nc: NatsConnection,
  n: RunNames,
  after: number,
): Promise<PlanAt | null> {
  const jsm = await directOf(nc);
  let last: StoredMsg | null = null;
  for (let seq = after + 1;;) {
    const m = await jsm.direct.getMessage(n.weightStream, {
      seq,
      next_by_subj: planSubject(n, "*"),
    });
    if (!m) break;
    last = m;
    seq = m.seq + 1;
  }
  return last ? await readPlan(last) : null;
}

/** A fetched version and where its time went. */
export interface FetchedWeights {
  weights: HalfWeights;
  /** Seconds from the first ask to every chunk received and verified (network + verify). */
  fetchS: number;
  /** Seconds the decoder spent storing and hashing chunks (overlaps the fetch). */
  decodeS: number;
}

export interface FetchOptions {
  /** The version's plan, if already read (a watcher's). */
  plan?: PlanAt;
  /** Stops the fetch (a newer version superseded it): the fetch resolves null. */
  signal?: AbortSignal;
}

/**
 * Fetches weights `version` as f16 bits, reading chunks as the trainer stores them; null when the
 * stream no longer holds it (or `signal` aborted). A chunk or manifest whose digest or sequence
 * does not match is a ChecksumError.
 */
export async function fetchWeights(
  nc: NatsConnection,
  n: RunNames,
  version: number,
  o: FetchOptions = {},
): Promise<FetchedWeights | null> {
  const t0 = performance.now();
  const jsm = await directOf(nc), stream = n.weightStream;
  const planMsg = o.plan ??
    await jsm.direct.getMessage(stream, { last_by_subj: planSubject(n, version) })
      .then((m) => m && readPlan(m));
  if (!planMsg) return null;
  const plan = planMsg.plan;
  if (plan.version !== version) {
    throw new ChecksumError(`weights v${version}: the plan names v${plan.version}`);
  }
  const decoder = chunkDecoder(plan), inFlight = windowOf(plan.chunkBytes);
  const subject = dataSubject(n, version);
  const ask = (start: number) => {
    const get = jsm.direct.getMessage(stream, { seq: start, next_by_subj: subject });
    get.catch(() => {}); // awaited in order below
    return { start, get };
  };
  /** Still there, not superseded: waiting on for the trainer's next message makes sense. */
  const alive = async () =>
    !o.signal?.aborted &&
    (await jsm.direct.getMessage(stream, { last_by_subj: planSubject(n, version) }))?.seq ===
      planMsg.seq;
  const seqs: number[] = [];
  let prev = planMsg.seq, progress = performance.now(), lastCheck = progress;
  /** Waits a little for a message not stored yet; false when the version is gone. */
  const wait = async (what: string) => {
    if (performance.now() - progress > TIMEOUT_S * 1000) {
      throw new Error(`weights v${version}: no ${what} for ${TIMEOUT_S} s`);
    }
    if (o.signal?.aborted) return false;
    if (performance.now() - lastCheck > 500) {
      lastCheck = performance.now();
      if (!(await alive())) return false;
    }
    await sleep(POLL_MS);
    return true;
  };
  try {
    // Chunk i is the first data message of the version after chunk i-1; chunks are published
    // back to back, so asking for sequence prev+1+k ahead is right unless something came between.
    const gets: { start: number; get: Promise<StoredMsg | null> }[] = [];
    for (let i = 0; i < plan.chunkCount;) {
      while (gets.length < Math.min(plan.chunkCount, i + inFlight)) {
        gets.push(ask(prev + 1 + gets.length - i));
      }
      const { start, get } = gets[i], msg = await get;
      if (msg && msg.seq > prev && start <= prev + 1) {
        decoder.add(msg.data);
        seqs.push(msg.seq);
        prev = msg.seq;
        progress = performance.now();
        i++;
        continue;
      }
      // Not stored yet, or asked at the wrong place: ask again for this one (the asks after it
      // stay: an answer that came is still right when the chunks are back to back).
      if (!msg && !(await wait("chunk"))) return null;
      gets[i] = ask(prev + 1);
    }
    let head: StoredMsg | null;
    while (
      !(head = await jsm.direct.getMessage(stream, { last_by_subj: headSubject(n, version) }))
    ) {
      if (!(await wait("manifest"))) return null;
    }
    const m = await unframe(head.data, `weights v${version} manifest`) as WeightsManifest;
    if (m.version !== version || m.epoch !== plan.epoch || m.chunks.length !== seqs.length) {
      throw new ChecksumError(`weights v${version}: the manifest does not match the plan`);
    }
    const bad = m.chunks.findIndex((c, i) => c.seq !== seqs[i]);
    if (bad >= 0) {
      throw new ChecksumError(
        `weights v${version}: chunk ${bad} is message ${seqs[bad]}, the manifest says ${
          m.chunks[bad].seq
        }`,
      );
    }
    const { weights, decodeS } = await decoder.finish(m);
    return { weights, decodeS, fetchS: (performance.now() - t0) / 1000 };
  } finally {
    decoder.close();
  }
}
