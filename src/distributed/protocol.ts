/**
 * The wire protocol of a distributed run: subject and stream names derived from the run's
 * subject prefix, the job and trajectory messages, and their framing. Every message is
 * `<sha-256 hex>\n<json>`; typed arrays travel as base64 strings. A message whose digest does
 * not match its body is refused (`ChecksumError`).
 *
 * Subjects (prefix `p`, default `webrl.<project>.<experiment>` sanitised):
 * - `p.jobs`: prompt jobs, stream `<P>_JOBS` (work-queue retention, one durable pull consumer
 *   `workers` shared by every worker; ack_wait = the job deadline).
 * - `p.traj`: trajectories, stream `<P>_TRAJ` (limits retention, read by the trainer).
 * - `p.weights.<version>.{data,head}`: f16 weight chunks and their manifest, stream `<P>_WEIGHTS`
 *   (limits retention, direct gets; see weight_stream.ts).
 * - object store bucket `<P>_RUN`: `run` (tokenizer files, stop ids, reward settings).
 */

/** Names of one run's subjects, streams and bucket. */
export interface RunNames {
  prefix: string;
  jobs: string;
  traj: string;
  jobStream: string;
  trajStream: string;
  /** Object store of the run info (`run`). */
  bucket: string;
  /** Subject root of the weight versions, and their stream. */
  weights: string;
  weightStream: string;
  consumer: string;
}

const SUBJECT_TOKEN = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/** The names of a run whose subjects start with `prefix` (dot-separated tokens, no wildcards). */
export function runNames(prefix: string): RunNames {
  if (!SUBJECT_TOKEN.test(prefix)) {
    throw new Error(
      `distributed.subject_prefix=${JSON.stringify(prefix)}: use dot-separated tokens of ` +
        "letters, digits, _ and - (no spaces or wildcards)",
    );
  }
  const base = prefix.replaceAll(".", "_").replaceAll("-", "_").toUpperCase();
  return {
    prefix,
    jobs: `${prefix}.jobs`,
    traj: `${prefix}.traj`,
    jobStream: `${base}_JOBS`,
    trajStream: `${base}_TRAJ`,
    bucket: `${base}_RUN`,
    weights: `${prefix}.weights`,
    weightStream: `${base}_WEIGHTS`,
    consumer: "workers",
  };
}

/** The default prefix of a run: `webrl.<project>.<experiment>` with odd characters as `_`. */
export function defaultPrefix(project: string, experiment: string): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, "_") || "_";
  return `webrl.${clean(project)}.${clean(experiment)}`;
}

/** Sampling settings of a job (the rollout's keys). */
export interface JobSampling {
  temperature: number;
  topK: number;
  topP: number;
  doSample: boolean;
}

/** One prompt group: `n` samples of one prompt under policy `version`. */
export interface Job {
  jobId: string;
  /** Random id of the trainer process; trajectories echo it so a restarted trainer drops old ones. */
  epoch: string;
  step: number;
  version: number;
  promptIds: number[];
  n: number;
  responseLength: number;
  sampling: JobSampling;
  seed: number;
  dataSource: string;
  groundTruth: string;
  extraInfo: Record<string, unknown>;
}

/** What a worker sends back for a job. */
export interface Trajectory {
  jobId: string;
  epoch: string;
  step: number;
  version: number;
  workerId: string;
  n: number;
  responseLength: number;
  responses: Int32Array; // [n, R]
  responseMask: Int32Array; // [n, R]
  logProbs: Float32Array; // [n, R] rollout log-probs of the sampled tokens
  /** [n] the worker's reward scores; null when it could not score (a custom reward function). */
  scores: number[] | null;
  /** Seconds the worker spent generating and scoring. */
  genSeconds: number;
  /** How many times JetStream had delivered the job (more than 1: an earlier holder failed). */
  deliveries: number;
  /**
   * Where the worker's time for the job's weights version went: fetch (network + verify), decode
   * (storing and hashing chunks, overlapping the fetch), build (the GPU upload), whether it was
   * fetched before a job named it, and how long this job waited for it.
   */
  weightTimes?: { fetchS: number; decodeS: number; buildS: number; eager: boolean; waitS: number };
}

export class ChecksumError extends Error {}

function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

function fromBase64(text: string): Uint8Array {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** SHA-256 of bytes as lowercase hex. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Frames a JSON value with the SHA-256 of its text. */
export async function frame(value: unknown): Promise<Uint8Array> {
  const body = new TextEncoder().encode(JSON.stringify(value));
  const head = new TextEncoder().encode(`${await sha256Hex(body)}\n`);
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

/** The JSON value of a framed message; a digest mismatch is a ChecksumError. */
export async function unframe(data: Uint8Array, what: string): Promise<unknown> {
  const nl = data.indexOf(10);
  if (nl !== 64) throw new ChecksumError(`${what}: no checksum header`);
  const want = new TextDecoder().decode(data.subarray(0, nl));
  const body = data.subarray(nl + 1);
  if ((await sha256Hex(body)) !== want) throw new ChecksumError(`${what}: checksum mismatch`);
  return JSON.parse(new TextDecoder().decode(body));
}

export function encodeJob(job: Job): Promise<Uint8Array> {
  return frame(job);
}

export async function decodeJob(data: Uint8Array): Promise<Job> {
  const j = await unframe(data, "job") as Job;
  if (typeof j.jobId !== "string" || !Array.isArray(j.promptIds) || !(j.n > 0)) {
    throw new Error(`job: malformed message (${JSON.stringify(j).slice(0, 120)})`);
  }
  return j;
}

export function encodeTrajectory(t: Trajectory): Promise<Uint8Array> {
  const bytes = (a: Int32Array | Float32Array) =>
    toBase64(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  return frame({
    ...t,
    responses: bytes(t.responses),
    responseMask: bytes(t.responseMask),
    logProbs: bytes(t.logProbs),
  });
}

export async function decodeTrajectory(data: Uint8Array): Promise<Trajectory> {
  const raw = await unframe(data, "trajectory") as Record<string, unknown>;
  const n = Number(raw.n), R = Number(raw.responseLength);
  const arr = (key: string) => {
    const v = raw[key];
    if (typeof v !== "string") throw new Error(`trajectory: field ${key} missing`);
    const b = fromBase64(v);
    if (b.length !== n * R * 4) {
      throw new Error(`trajectory ${raw.jobId}: ${key} holds ${b.length} bytes, want ${n * R * 4}`);
    }
    return b.buffer as ArrayBuffer;
  };
  return {
    ...(raw as unknown as Trajectory),
    responses: new Int32Array(arr("responses")),
    responseMask: new Int32Array(arr("responseMask")),
    logProbs: new Float32Array(arr("logProbs")),
  };
}
