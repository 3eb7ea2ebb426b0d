/** The engine's request, result, options and stats (engine.ts). */
import type { KvDtype } from "../nn/mod.ts";
import type { SamplingOptions } from "./sampler.ts";

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
   * Steps recorded before the oldest one's tokens are read (default 3): a readback's latency
   * (milliseconds in Deno) then overlaps the steps behind it; an EOS is seen up to this many
   * steps late, and the tokens sampled meanwhile are dropped.
   */
  stepsInFlight?: number;
  /** One setting for every request (default: temperature 1, no top-k / top-p, sampling on). */
  sampling?: Partial<SamplingOptions>;
  /**
   * Prefill identical prompts once while requests with them run or wait (default true;
   * engine_prefix.ts).
   */
  sharePrefixes?: boolean;
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
  /** Context tokens prefilled: promptTokens less those of admissions from a shared prompt. */
  prefillTokens: number;
  preemptions: number;
  /** Tokens returned, over all requests. */
  tokens: number;
  /** Tokens sampled for a sequence whose EOS had not been read yet (the step it ran late). */
  dropped: number;
  numBlocks: number;
  freeBlocks: number;
  /** Most blocks held at once. */
  peakBlocks: number;
  running: number;
  waiting: number;
}
