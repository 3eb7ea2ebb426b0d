/** The engine's request (and its checks), result, options, stats and sampler settings (engine.ts). */
import { type CausalLM, type KvDtype, PagedKvCache } from "../nn/mod.ts";
import { MAX_EOS_IDS, type SamplerConfig, type SamplingOptions } from "./sampler.ts";

/** Positions per KV block of the engine's pool (vLLM's default) unless EngineOptions.blockSize says otherwise. */
export const ENGINE_BLOCK_SIZE = 16;

/**
 * Most engine steps left unread by default: a request resolves within this many steps of its end,
 * which callers that wait on single requests need (the agent loop's next turn, a rollout worker
 * publishing each job as soon as its samples are done).
 */
export const ENGINE_STEPS_IN_FLIGHT = 16;

/**
 * Steps left unread for a batch whose requests are all submitted at once and awaited together
 * (the trainer's single-turn rollout): fewer, larger reads, and no one waits on a request alone.
 * 64 requests of 128 + 256 tokens (8 prompts x 8 samples; 0.5B shape, f16 weights and KV cache,
 * `engine_device.ts --mode engine --in-flight N`) took 2.11 / 1.99 s with 16, 1.95 / 2.02 with 32
 * and 1.81 / 1.75 with 64 on one H100 (2026-11-27, each read awaited before recording more); with
 * reads made while the next steps are recorded, 1.78 / 1.73 s with 16 and 1.59 / 1.62 with 64 on
 * one H200 (against 1.88 / 1.91 and 1.61 / 1.65 awaited, same call).
 */
export const ENGINE_BATCH_STEPS_IN_FLIGHT = 64;

export interface EngineOptions {
  /** Sequences decoded together at most (verl's rollout.max_num_seqs). */
  maxSeqs: number;
  /** Positions per cache block (default 16). */
  blockSize?: number;
  /** Blocks in the pool: the KV memory is numBlocks * blockSize positions of every layer. */
  numBlocks: number;
  /** Element type of the cache (default f32). */
  kvDtype?: KvDtype;
  eosTokenIds: number[];
  padTokenId: number;
  /**
   * Most steps recorded before their tokens are read (default ENGINE_STEPS_IN_FLIGHT): Deno
   * answers a read only once the GPU queue is idle, so the engine reads the steps of half this
   * many at once while it records the next half (1: each step is read before the next is
   * recorded); an EOS is seen up to this many steps late, and the tokens sampled meanwhile are
   * dropped.
   */
  stepsInFlight?: number;
  /** One setting for every request (default: temperature 1, no top-k / top-p, sampling on). */
  sampling?: Partial<SamplingOptions>;
  /**
   * Prefill identical prompts once while requests with them run or wait (default true;
   * engine_prefix.ts).
   */
  sharePrefixes?: boolean;
  /**
   * Automatic prefix caching (verl's rollout.enable_prefix_caching, default true): full blocks
   * of earlier contexts stay cached while the pool has room, and a request whose context starts
   * with them prefills only the rest (engine.ts).
   */
  prefixCaching?: boolean;
}

export interface EngineRequest {
  promptIds: ArrayLike<number>;
  /** Tokens to generate at most (the EOS included). */
  maxTokens: number;
  /** Seeds this request's draws: token i uses (seed, i) whatever else runs. Default 0. */
  seed?: number;
  returnLogProbs?: boolean;
}

export interface EngineResult {
  /** The sampled tokens, the EOS included when it ended the sequence. */
  tokens: Int32Array;
  /** log-prob of each token at the sampling temperature (untempered when greedy). */
  logProbs?: Float32Array;
  finishReason: "stop" | "length";
}

export interface EngineStats {
  steps: number;
  /**
   * Prefills run (admissions, re-admissions after preemption included; a shared prompt's
   * counts once, the sequences that start from it do not).
   */
  prefills: number;
  /** Context tokens of every admission: what prefills without sharing would compute. */
  promptTokens: number;
  /**
   * Context tokens prefilled: promptTokens less those of admissions from a shared prompt and
   * those held from the prefix cache.
   */
  prefillTokens: number;
  /** Context tokens of prefills held from the prefix cache instead of computed. */
  cachedTokens: number;
  preemptions: number;
  /** Tokens returned, over all requests. */
  tokens: number;
  /** Tokens sampled for a sequence whose EOS had not been read yet (the step it ran late). */
  dropped: number;
  /** Host seconds spent recording steps, and waiting for their tokens. */
  recordSeconds: number;
  waitSeconds: number;
  /** Steps recorded while an earlier window's tokens were being read (the GPU kept working). */
  stepsWhileReading: number;
  numBlocks: number;
  freeBlocks: number;
  /** Most blocks held at once. */
  peakBlocks: number;
  /** Blocks in the prefix cache (held or not; those nobody holds count in freeBlocks). */
  cachedBlocks: number;
  running: number;
  waiting: number;
}

/** The engine's checked options' KV pool for `model`. */
export function enginePool(model: CausalLM, options: EngineOptions): PagedKvCache {
  const { maxSeqs, numBlocks } = options;
  if (!(Number.isInteger(maxSeqs) && maxSeqs > 0)) {
    throw new Error(`Engine: maxSeqs ${maxSeqs} must be a positive integer`);
  }
  if (options.eosTokenIds.length > MAX_EOS_IDS) {
    throw new Error(`Engine: at most ${MAX_EOS_IDS} EOS ids, got ${options.eosTokenIds.length}`);
  }
  const c = model.config;
  return PagedKvCache.create({
    layers: c.numHiddenLayers,
    numBlocks,
    blockSize: options.blockSize ?? ENGINE_BLOCK_SIZE,
    kvHeads: c.numKeyValueHeads,
    headDim: c.headDim,
    dtype: options.kvDtype,
  });
}

/** The counters of EngineStats, at zero (the rest is read off the engine's state). */
export function zeroStats() {
  return {
    steps: 0,
    prefills: 0,
    promptTokens: 0,
    prefillTokens: 0,
    cachedTokens: 0,
    preemptions: 0,
    tokens: 0,
    dropped: 0,
    peakBlocks: 0,
    recordSeconds: 0,
    waitSeconds: 0,
    stepsWhileReading: 0,
  };
}

/** Why `request` (prompt ids `prompt`) cannot run on an engine's vocabulary and pool; null if it can. */
export function requestProblem(
  prompt: Int32Array,
  request: EngineRequest,
  o: { vocab: number; blockSize: number; numBlocks: number },
): string | null {
  if (prompt.length === 0) return "empty prompt";
  const bad = prompt.findIndex((t) => t < 0 || t >= o.vocab);
  if (bad >= 0) return `token id ${prompt[bad]} at ${bad} is outside [0, ${o.vocab})`;
  if (!(Number.isInteger(request.maxTokens) && request.maxTokens > 0)) {
    return `maxTokens ${request.maxTokens} must be a positive integer`;
  }
  const need = Math.ceil((prompt.length + request.maxTokens) / o.blockSize);
  if (need <= o.numBlocks) return null;
  return `prompt ${prompt.length} + maxTokens ${request.maxTokens} needs ${need} blocks of ` +
    `${o.blockSize}, the pool has ${o.numBlocks}`;
}

/** The sampler settings of every row (each row brings its own seed and token index). */
export function samplerConfig(options: EngineOptions): SamplerConfig {
  const s = options.sampling ?? {};
  return {
    temperature: s.temperature ?? 1,
    topK: s.topK ?? 0,
    topP: s.topP ?? 1,
    doSample: s.doSample ?? true,
    seed: 0,
    eosTokenIds: options.eosTokenIds,
    padTokenId: options.padTokenId,
  };
}
