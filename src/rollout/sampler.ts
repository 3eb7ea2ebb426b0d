/**
 * GPU token sampling for the decode loop (shaders/sampling.wgsl): temperature, top-k, top-p or
 * greedy, with finished flags, responses, masks and log-probs kept in GPU buffers so that many
 * steps are recorded without a readback.
 */
import { gpu, packParams } from "../gpu/mod.ts";
import { grid1d } from "../tensor/mod.ts";
import { fmtShape, Tensor } from "../tensor/mod.ts";
import { inverseTemperature, type SamplingOptions } from "./ref_sampler.ts";

export type { SamplingOptions } from "./ref_sampler.ts";

/** Up to this many EOS ids (Qwen lists two or three). */
export const MAX_EOS_IDS = 8;

/** Logits each invocation of the first pass holds (a chunk is 64 or 256 times this). */
const PER_INVOCATION = 16;
/** Top-k candidates kept per chunk: a larger top_k scans whole rows instead (slower, exact). */
const CANDIDATES = 128;

export interface SamplerConfig extends SamplingOptions {
  seed: number;
  eosTokenIds: number[];
  padTokenId: number;
}

/** Per-sequence decode state on the GPU: what the sampler writes and the next step reads. */
export class SampleBuffers {
  private constructor(
    readonly rows: number,
    readonly responseLength: number,
    /** i32 [N, R] sampled tokens (pad after EOS). */
    readonly responses: Tensor,
    /** i32 [N, R] 1 up to and including EOS. */
    readonly responseMask: Tensor,
    /**
     * f32 [N, R] log-prob of each sampled token at the sampling temperature (at temperature 0,
     * greedy, the log-prob under the untempered distribution, temperature 1).
     */
    readonly logProbs: Tensor,
    /** u32 [N] 1 once a row has emitted EOS. */
    readonly finished: Tensor,
    /** i32 [N, 1] the token each row feeds to the next decode step. */
    readonly nextIds: Tensor,
    /** i32 [N, 1] the rotary position of `nextIds` (bumped by every sampling step). */
    readonly positions: Tensor,
  ) {}

  /**
   * `lastPositions` [N]: the position of each row's last prompt token; the first sampled token
   * sits one further. Responses start as `padTokenId`, so columns never sampled read as padding.
   */
  static create(
    rows: number,
    responseLength: number,
    lastPositions: Int32Array,
    padTokenId = 0,
  ): SampleBuffers {
    if (lastPositions.length !== rows) {
      throw new Error(`SampleBuffers: ${lastPositions.length} positions for ${rows} rows`);
    }
    const R = responseLength;
    const bufs = new SampleBuffers(
      rows,
      R,
      Tensor.from(new Int32Array(rows * R).fill(padTokenId), [rows, R], "i32", "responses").keep(),
      Tensor.from(new Int32Array(rows * R), [rows, R], "i32", "response_mask").keep(),
      Tensor.from(new Float32Array(rows * R), [rows, R], "f32", "rollout_log_probs").keep(),
      Tensor.from(new Uint32Array(rows), [rows], "u32", "finished").keep(),
      Tensor.from(new Int32Array(rows), [rows, 1], "i32", "next_ids").keep(),
      Tensor.from(lastPositions, [rows, 1], "i32", "positions").keep(),
    );
    return bufs;
  }

  dispose(): void {
    for (
      const t of [
        this.responses,
        this.responseMask,
        this.logProbs,
        this.finished,
        this.nextIds,
        this.positions,
      ]
    ) t.dispose();
  }
}

function checkConfig(cfg: SamplerConfig): void {
  if (cfg.eosTokenIds.length > MAX_EOS_IDS) {
    throw new Error(`sampleStep: at most ${MAX_EOS_IDS} EOS ids, got ${cfg.eosTokenIds.length}`);
  }
  if (!(cfg.temperature >= 0) || !Number.isFinite(cfg.temperature)) {
    throw new Error(`sampleStep: temperature must be finite and >= 0, got ${cfg.temperature}`);
  }
  if (!(cfg.topP > 0 && cfg.topP <= 1)) {
    throw new Error(`sampleStep: top_p must be in (0, 1], got ${cfg.topP}`);
  }
}

/**
 * Picks one token per row from `logits` [N, V] (f32) and records it at column `step` of the
 * buffers; rows already finished get `padTokenId`. Records two dispatches (per-chunk stats and
 * top-k candidates over the whole GPU, then one workgroup per row), reads nothing back.
 * `rowRng` u32 [N, 2]: each row's own (seed, step) for its draw, hashed as row 0 (cfg.seed and
 * `step` then only place the outputs), so a row draws what a one-row batch of its seed would.
 */
export function sampleStep(
  logits: Tensor,
  bufs: SampleBuffers,
  step: number,
  cfg: SamplerConfig,
  options: { rowRng?: Tensor } = {},
): void {
  if (logits.dtype !== "f32" || logits.rank !== 2 || logits.shape[0] !== bufs.rows) {
    throw new Error(
      `sampleStep: logits must be f32 [${bufs.rows}, V], got ${logits.dtype} ${
        fmtShape(logits.shape)
      }`,
    );
  }
  if (!Number.isInteger(step) || step < 0 || step >= bufs.responseLength) {
    throw new Error(`sampleStep: step ${step} outside [0, ${bufs.responseLength})`);
  }
  checkConfig(cfg);
  const rowRng = options.rowRng;
  if (rowRng && (rowRng.dtype !== "u32" || rowRng.size !== 2 * bufs.rows)) {
    throw new Error(
      `sampleStep: rowRng must be u32 [${bufs.rows}, 2], got ${rowRng.dtype} ${
        fmtShape(rowRng.shape)
      }`,
    );
  }
  const V = logits.shape[1];
  const rows = bufs.rows;
  const eos = [...cfg.eosTokenIds, ...new Array(MAX_EOS_IDS - cfg.eosTokenIds.length).fill(-1)];
  const topK = cfg.topK > 0 && cfg.topK < V ? cfg.topK : 0;
  // Small vocabularies (tests, synthetic tasks) waste most of a 256-wide workgroup on barriers.
  const wg = V <= 2048 ? 64 : 256;
  const chunk = wg * PER_INVOCATION;
  const chunks = Math.ceil(V / chunk);
  const g = gpu();
  const work = Tensor.empty([rows * chunks * (4 + CANDIDATES)], "u32", "sampling_work");
  g.dispatch({
    shader: "sampling_chunks",
    defines: { WG: `${wg}u`, PER: `${PER_INVOCATION}u`, CAP: `${CANDIDATES}u` },
  }, {
    params: packParams([
      rows,
      V,
      chunks,
      topK <= CANDIDATES ? topK : 0,
      { f32: inverseTemperature(cfg.temperature) },
      32,
      wg,
    ]),
    buffers: [logits.buffer, work.buffer],
    workgroups: [chunks, rows],
  });
  const params = packParams([
    rows,
    V,
    bufs.responseLength,
    step,
    { f32: inverseTemperature(cfg.temperature) },
    topK,
    { f32: cfg.topP },
    // temperature 0 is greedy, as in vLLM: the argmax, whatever doSample says.
    cfg.doSample && cfg.temperature > 0 ? 1 : 0,
    cfg.seed >>> 0,
    { i32: cfg.padTokenId },
    cfg.eosTokenIds.length,
    chunks,
    ...eos.map((e) => ({ i32: e })),
    32,
    wg,
    rowRng ? 1 : 0,
  ]);
  g.dispatch({
    shader: "sampling",
    defines: {
      WG: `${wg}u`,
      CAP: `${CANDIDATES}u`,
      CHUNK: `${chunk}u`,
      // Workgroup memory is zero-filled at every launch; on a CPU adapter a large candidate
      // array also makes the shader take minutes to compile, and test vocabularies are small.
      MAXC: `${Math.min(chunks * CANDIDATES, g.isCpuAdapter ? 256 : 4096)}u`,
      MAXCH: `${Math.min(chunks, 256)}u`,
    },
  }, {
    params,
    buffers: [
      logits.buffer,
      work.buffer,
      bufs.responses.buffer,
      bufs.responseMask.buffer,
      bufs.logProbs.buffer,
      bufs.finished.buffer,
      bufs.nextIds.buffer,
      bufs.positions.buffer,
      (rowRng ?? work).buffer,
    ],
    workgroups: grid1d(rows, 1),
  });
  work.dispose();
}
