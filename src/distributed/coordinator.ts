/**
 * The trainer's side of a distributed run: creates the run's streams and run-info bucket (purging
 * what an earlier trainer process left, so stale jobs never run), publishes weight versions and
 * prompt jobs, and collects trajectories. Trajectories are deduplicated by job id (a job
 * redelivered after its ack wait may be answered twice: the first answer counts), and answers for
 * an earlier trainer process (another epoch) are dropped. Metrics are per collected step.
 */
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  type JetStreamClient,
  type JetStreamManager,
  jetstreamManager,
  RetentionPolicy,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { RewardManagerOptions } from "../reward/mod.ts";
import type { EngineSettings } from "../config/mod.ts";
import { type ObjectStore, Objm } from "@nats-io/obj";
import {
  decodeTrajectory,
  encodeJob,
  frame,
  type Job,
  type RunNames,
  runNames,
  type Trajectory,
} from "./protocol.ts";
import { type PublishTimes, resetWeightStream, WeightPublisher } from "./weight_stream.ts";
import type { ConnectOptions } from "./connect.ts";
import { BackgroundPublisher } from "./publisher.ts";
import { weightTimeMetrics } from "./weight_metrics.ts";

export interface CoordinatorOptions {
  prefix: string;
  /** Seconds a worker may hold a job before it goes to another worker (the ack wait). */
  jobTimeoutS: number;
  /** Seconds a step waits for its last trajectory before the run stops with an error. */
  stepTimeoutS: number;
  /** Deliveries of one job before JetStream gives up on it. */
  maxDeliver: number;
  /** Weight versions kept in the weights stream (older ones are purged). */
  keepVersions: number;
  /**
   * Pack and store weights from a thread of their own (Deno), over a second connection with these
   * settings; default: in this thread, over this connection.
   */
  background?: { url: string; connect: ConnectOptions };
}

/** What a worker needs besides the weights: the tokenizer's files, the stop ids, the reward. */
export interface RunInfo {
  tokenizerFiles: Record<string, string>;
  eosTokenIds: number[];
  /**
   * The reward manager's settings (reward_model.reward_manager, overlong_buffer); null when the
   * run scores with a custom reward function, which stays on the trainer (workers send no scores).
   */
  reward: Pick<RewardManagerOptions, "manager" | "overlongBuffer"> | null;
  /**
   * actor_rollout_ref.rollout.dtype (absent: float32): float16 decodes with an f16 KV cache. The
   * weights are f16 where the worker's GPU has shader-f16 whatever it says (versions come as f16).
   */
  rolloutDtype?: "float32" | "float16";
  /**
   * actor_rollout_ref.rollout's engine settings (absent: the engine's defaults): every worker's
   * engine follows them, as verl's rollout replicas share one rollout config; a worker's own
   * --max-num-seqs / --kv-cache-tokens override the pool size for its GPU.
   */
  engine?: EngineSettings;
}

export type JobSpec = Omit<Job, "epoch" | "step" | "version">;

interface Pending {
  jobs: Map<string, { job: Job; sentAt: number }>;
  results: Map<string, { traj: Trajectory; latency: number }>;
  bytesJobs: number;
  submittedAt: number;
  wake?: () => void;
}

export class Coordinator {
  readonly names: RunNames;
  readonly epoch = crypto.randomUUID();
  #nc: NatsConnection;
  #js: JetStreamClient;
  #os: ObjectStore;
  #o: CoordinatorOptions;
  #pending = new Map<number, Pending>();
  #counts = {
    duplicates: 0,
    staleDropped: 0,
    corrupt: 0,
    bytesTraj: 0,
    bytesWeights: 0,
    consumerRestarts: 0,
  };
  #weights: WeightPublisher;
  #stopped = false;
  #publisher: BackgroundPublisher | null = null;
  #consuming: Promise<void> | null = null;
  /** Where the newest stored version's publication spent its time (reported once). */
  #published: Record<string, number> | null = null;
  /** Hears the buffers of transferred weights once the background publisher is done with them. */
  recycle: ((buffers: ArrayBuffer[]) => void) | null = null;

  private constructor(nc: NatsConnection, os: ObjectStore, o: CoordinatorOptions) {
    this.#nc = nc;
    this.#js = jetstream(nc);
    this.#os = os;
    this.#o = o;
    this.names = runNames(o.prefix);
    this.#weights = new WeightPublisher(nc, this.names, o.keepVersions);
  }

  /** Creates (or empties) the run's streams, consumer and bucket and starts reading trajectories. */
  static async open(nc: NatsConnection, o: CoordinatorOptions): Promise<Coordinator> {
    const n = runNames(o.prefix);
    const jsm = await jetstreamManager(nc);
    await ensureStream(jsm, n.jobStream, n.jobs, RetentionPolicy.Workqueue);
    await ensureStream(jsm, n.trajStream, n.traj, RetentionPolicy.Limits);
    await jsm.streams.purge(n.jobStream);
    await jsm.streams.purge(n.trajStream);
    await resetWeightStream(jsm, n);
    const consumer = {
      durable_name: n.consumer,
      ack_policy: AckPolicy.Explicit,
      ack_wait: o.jobTimeoutS * 1e9,
      max_deliver: o.maxDeliver,
      max_ack_pending: -1,
    };
    try {
      await jsm.consumers.update(n.jobStream, n.consumer, consumer);
    } catch {
      await jsm.consumers.add(n.jobStream, consumer);
    }
    const objm = new Objm(nc);
    const os = await objm.create(n.bucket);
    for await (const e of await os.list()) await os.delete(e.name);
    const c = new Coordinator(nc, os, o);
    if (o.background) {
      c.#publisher = new BackgroundPublisher(
        { ...o.background, prefix: o.prefix, keepVersions: o.keepVersions },
        (buffers) => c.recycle?.(buffers),
      );
    }
    c.#consuming = c.#consume();
    return c;
  }

  /** Publishes the tokenizer files and stop ids (object `run`). */
  async publishRunInfo(info: RunInfo): Promise<void> {
    await this.#os.putBlob({ name: "run" }, await frame(info));
  }

  /**
   * Publishes weights `version` (f16 chunks; f32 arrays are converted, Uint16Array f16 bits sent
   * as they are) and purges versions older than `keepVersions`. `transfer`: the arrays' buffers
   * may move to the background publisher (see `recycle`); `readbackS`: the caller's GPU readback,
   * reported with the publication's own times.
   */
  async publishWeights(
    version: number,
    modelConfig: string,
    tensors: ReadonlyMap<string, Float32Array | Uint16Array>,
    o: { transfer?: boolean; readbackS?: number } = {},
  ): Promise<PublishTimes> {
    const w = { version, epoch: this.epoch, modelConfig, tensors };
    const times = this.#publisher
      ? await this.#publisher.publish(w, o.transfer)
      : await this.#weights.publish(w);
    this.#counts.bytesWeights += times.bytes;
    this.#published = {
      "distributed/publish_encode_s": times.encodeS,
      "distributed/publish_upload_s": times.uploadS,
      ...(o.readbackS === undefined ? {} : { "distributed/publish_readback_s": o.readbackS }),
    };
    return times;
  }

  /** Publishes the jobs of one step under weights `version`. */
  async submit(step: number, version: number, specs: JobSpec[]): Promise<void> {
    if (this.#pending.has(step)) throw new Error(`step ${step} was already submitted`);
    const p: Pending = { jobs: new Map(), results: new Map(), bytesJobs: 0, submittedAt: 0 };
    this.#pending.set(step, p);
    p.submittedAt = performance.now();
    for (const spec of specs) {
      const job: Job = { ...spec, epoch: this.epoch, step, version };
      const data = await encodeJob(job);
      p.bytesJobs += data.length;
      p.jobs.set(job.jobId, { job, sentAt: performance.now() });
      await this.#js.publish(this.names.jobs, data, { msgID: `${this.epoch}.${job.jobId}` });
    }
  }

  isSubmitted(step: number): boolean {
    return this.#pending.has(step);
  }

  /** Waits for every trajectory of `step`; returns them in job order with the step's metrics. */
  async collect(
    step: number,
  ): Promise<{ trajectories: Trajectory[]; metrics: Record<string, number> }> {
    const p = this.#pending.get(step);
    if (!p) throw new Error(`step ${step} was never submitted`);
    const t0 = performance.now();
    const deadline = t0 + this.#o.stepTimeoutS * 1000;
    while (p.results.size < p.jobs.size) {
      const left = deadline - performance.now();
      if (left <= 0) {
        const missing = [...p.jobs.keys()].filter((id) => !p.results.has(id));
        throw new Error(
          `step ${step}: ${missing.length} of ${p.jobs.size} jobs got no trajectory within ` +
            `distributed.step_timeout_s=${this.#o.stepTimeoutS} (first: ${missing[0]}); are ` +
            `workers running (deno task worker --url ...) and subscribed to ${this.names.prefix}?`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 1000));
        p.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.#pending.delete(step);
    const trajectories = [...p.jobs.keys()].map((id) => p.results.get(id)!.traj);
    const latencies = [...p.results.values()].map((r) => r.latency);
    const bytesTraj = this.#counts.bytesTraj, bytesWeights = this.#counts.bytesWeights;
    this.#counts.bytesTraj = 0;
    this.#counts.bytesWeights = 0;
    const metrics: Record<string, number> = {
      "distributed/jobs": p.jobs.size,
      "distributed/workers": new Set(trajectories.map((t) => t.workerId)).size,
      "distributed/bytes_jobs": p.bytesJobs,
      "distributed/bytes_trajectories": bytesTraj,
      "distributed/bytes_weights": bytesWeights,
      "distributed/job_latency_s/mean": latencies.reduce((a, b) => a + b, 0) / latencies.length,
      "distributed/job_latency_s/max": Math.max(...latencies),
      "distributed/worker_gen_s/mean": trajectories.reduce((a, t) => a + t.genSeconds, 0) /
        trajectories.length,
      "distributed/wait_s": (performance.now() - t0) / 1000,
      "distributed/in_flight_before_wait_s": (t0 - p.submittedAt) / 1000,
      "distributed/redelivered": trajectories.filter((t) => t.deliveries > 1).length,
      "distributed/duplicates": this.#counts.duplicates,
      "distributed/stale_dropped": this.#counts.staleDropped,
      "distributed/corrupt": this.#counts.corrupt,
      "distributed/consumer_restarts": this.#counts.consumerRestarts,
      ...this.#published,
      ...weightTimeMetrics(trajectories),
    };
    this.#published = null;
    return { trajectories, metrics };
  }

  /**
   * Reads the trajectory stream from its start (purged at open) with an ordered consumer; when
   * the consumer fails (missed heartbeats on a busy trainer, a server restart) a new one resumes
   * after the last message read, so none is skipped.
   */
  async #consume(): Promise<void> {
    let seq = 0;
    while (!this.#stopped) {
      try {
        const consumer = await this.#js.consumers.get(
          this.names.trajStream,
          seq === 0
            ? { deliver_policy: DeliverPolicy.All }
            : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: seq + 1 },
        );
        const messages = await consumer.consume();
        for await (const m of messages) {
          if (this.#stopped) return;
          seq = m.seq;
          await this.#receive(m.data);
        }
      } catch {
        if (this.#stopped) return;
        this.#counts.consumerRestarts++;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  async #receive(data: Uint8Array): Promise<void> {
    let t: Trajectory;
    try {
      t = await decodeTrajectory(data);
    } catch {
      // A checksum mismatch or a malformed body: the job stays missing and the step says so.
      this.#counts.corrupt++;
      return;
    }
    this.#counts.bytesTraj += data.length;
    const p = t.epoch === this.epoch ? this.#pending.get(t.step) : undefined;
    const sent = p?.jobs.get(t.jobId);
    if (!p || !sent) {
      // Another trainer process's job, or a step already collected: a late duplicate.
      if (t.epoch !== this.epoch) this.#counts.staleDropped++;
      else this.#counts.duplicates++;
      return;
    }
    if (p.results.has(t.jobId)) {
      this.#counts.duplicates++;
      return;
    }
    p.results.set(t.jobId, { traj: t, latency: (performance.now() - sent.sentAt) / 1000 });
    p.wake?.();
  }

  async close(): Promise<void> {
    this.#stopped = true;
    this.#publisher?.close();
    await this.#nc.drain().catch(() => {});
    await this.#consuming?.catch(() => {});
  }
}

async function ensureStream(
  jsm: JetStreamManager,
  name: string,
  subject: string,
  retention: RetentionPolicy,
): Promise<void> {
  try {
    await jsm.streams.info(name);
  } catch {
    await jsm.streams.add({ name, subjects: [subject], retention, max_msg_size: 8 << 20 });
  }
}
