/**
 * Continuous batching over a paged KV cache (vLLM's scheduling, recompute preemption): requests
 * are submitted at any time and each resolves as soon as its sequence ends. A step loop runs
 * while requests exist: the running sequences get the block their next token needs (when the
 * pool runs dry the most recently admitted one is preempted: its blocks freed, it goes back to
 * the front of the queue to be prefilled again with its prompt and the tokens it has so far), then
 * waiting requests are admitted into free slots while blocks allow (unless this step preempted),
 * then one GPU step (engine_step.ts) prefills the admitted, decodes the running and samples a
 * token for each; sequences that sample EOS or reach maxTokens finish, their slot and blocks
 * free for the next step. The sampled tokens come back in one small read per `stepsInFlight`
 * steps (a read costs about a decode step's GPU time of latency in Deno, and waits for the queue
 * to empty), so the GPU runs each step while the host records the next. Lengths and maxTokens are known without the tokens, so only an EOS is seen late: that
 * sequence's tokens of the steps already recorded are dropped (stats.dropped) and its blocks are
 * freed once the EOS is read.
 */
import type { CausalLM, KvDtype } from "../nn/mod.ts";
import { PagedKvCache } from "../nn/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { Tensor } from "../tensor/mod.ts";
import {
  type InFlightStep,
  recordStep,
  type StepReadback,
  type StepSequence,
} from "./engine_step.ts";
import { MAX_EOS_IDS, type SamplerConfig, type SamplingOptions } from "./sampler.ts";

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
   * Steps recorded before their tokens are read, together (default 16): Deno answers a read
   * only once the GPU queue is idle, so the GPU runs each step while the host records the next
   * and waits once per this many steps; an EOS is seen up to this many steps late, and the
   * tokens sampled meanwhile are dropped.
   */
  stepsInFlight?: number;
  /** One setting for every request (default: temperature 1, no top-k / top-p, sampling on). */
  sampling?: Partial<SamplingOptions>;
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
  /** Prefills run (admissions, re-admissions after preemption included). */
  prefills: number;
  preemptions: number;
  /** Tokens returned, over all requests. */
  tokens: number;
  /** Tokens sampled for a sequence whose EOS had not been read yet (the step it ran late). */
  dropped: number;
  /** Host seconds spent recording steps, and waiting for their tokens. */
  recordSeconds: number;
  waitSeconds: number;
  numBlocks: number;
  freeBlocks: number;
  /** Most blocks held at once. */
  peakBlocks: number;
  running: number;
  waiting: number;
}

interface Sequence extends StepSequence {
  request: EngineRequest;
  logProbs: number[];
  done: boolean;
  resolve: (r: EngineResult) => void;
  reject: (e: unknown) => void;
}

export class Engine {
  readonly #cache: PagedKvCache;
  readonly #sampler: SamplerConfig;
  readonly #eos: Set<number>;
  readonly #waiting: Sequence[] = [];
  /** In admission order: the last is the first preempted. */
  readonly #running: Sequence[] = [];
  #loop: Promise<void> | null = null;
  #closed = false;
  readonly #stats = {
    steps: 0,
    prefills: 0,
    preemptions: 0,
    tokens: 0,
    dropped: 0,
    peakBlocks: 0,
    recordSeconds: 0,
    waitSeconds: 0,
  };

  constructor(readonly model: CausalLM, readonly options: EngineOptions) {
    const { maxSeqs, numBlocks } = options;
    const blockSize = options.blockSize ?? 16;
    if (!(Number.isInteger(maxSeqs) && maxSeqs > 0)) {
      throw new Error(`Engine: maxSeqs ${maxSeqs} must be a positive integer`);
    }
    if (options.eosTokenIds.length > MAX_EOS_IDS) {
      throw new Error(`Engine: at most ${MAX_EOS_IDS} EOS ids, got ${options.eosTokenIds.length}`);
    }
    const c = model.config;
    this.#cache = PagedKvCache.create({
      layers: c.numHiddenLayers,
      numBlocks,
      blockSize,
      kvHeads: c.numKeyValueHeads,
      headDim: c.headDim,
      dtype: options.kvDtype,
    });
    const s = options.sampling ?? {};
    this.#sampler = {
      temperature: s.temperature ?? 1,
      topK: s.topK ?? 0,
      topP: s.topP ?? 1,
      doSample: s.doSample ?? true,
      seed: 0, // each row brings its own (seed, token index)
      eosTokenIds: options.eosTokenIds,
      padTokenId: options.padTokenId,
    };
    this.#eos = new Set(options.eosTokenIds);
  }

  /** Queues a request; resolves when its sequence ends. */
  submit(request: EngineRequest): Promise<EngineResult> {
    if (this.#closed) return Promise.reject(new Error("Engine: submit after close"));
    const prompt = Int32Array.from(request.promptIds);
    const V = this.model.config.vocabSize;
    const fail = (why: string) => Promise.reject(new Error(`Engine.submit: ${why}`));
    if (prompt.length === 0) return fail("empty prompt");
    const bad = prompt.findIndex((t) => t < 0 || t >= V);
    if (bad >= 0) return fail(`token id ${prompt[bad]} at ${bad} is outside [0, ${V})`);
    if (!(Number.isInteger(request.maxTokens) && request.maxTokens > 0)) {
      return fail(`maxTokens ${request.maxTokens} must be a positive integer`);
    }
    const need = this.#cache.blocksFor(prompt.length + request.maxTokens);
    if (need > this.#cache.numBlocks) {
      return fail(
        `prompt ${prompt.length} + maxTokens ${request.maxTokens} needs ${need} blocks of ` +
          `${this.#cache.blockSize}, the pool has ${this.#cache.numBlocks}`,
      );
    }
    return new Promise<EngineResult>((resolve, reject) => {
      this.#waiting.push({
        prompt,
        tokens: [],
        sampled: 0,
        row: -1,
        done: false,
        logProbs: [],
        seed: request.seed ?? 0,
        cache: { length: 0, blocks: [] },
        request,
        resolve,
        reject,
      });
      this.#loop ??= this.#run();
    });
  }

  stats(): EngineStats {
    return {
      ...this.#stats,
      numBlocks: this.#cache.numBlocks,
      freeBlocks: this.#cache.freeBlocks,
      running: this.#running.length,
      waiting: this.#waiting.length,
    };
  }

  /** Refuses new requests, waits for the submitted ones to finish, frees the cache. */
  async close(): Promise<void> {
    const first = !this.#closed;
    this.#closed = true;
    await this.#loop;
    if (first) this.#cache.dispose();
  }

  async #run(): Promise<void> {
    const depth = this.options.stepsInFlight ?? 16;
    const inFlight: InFlightStep[] = [];
    const stride = this.options.maxSeqs;
    const ring = Tensor.empty([depth * 2 * stride], "i32", "engine.readback").keep();
    try {
      await null; // requests submitted in the same tick start together
      while (this.#waiting.length > 0 || this.#running.length > 0) {
        const readback = { ring, slot: inFlight.length, stride };
        const next = this.#record(inFlight.at(-1) ?? null, readback);
        if (next) inFlight.push(next);
        else if (inFlight.length === 0) {
          throw new Error("Engine: no step can run (a scheduling fault)");
        }
        if (!next || inFlight.length >= depth) await this.#collect(inFlight.splice(0), readback);
      }
    } catch (e) {
      for (const step of inFlight) step.bufs.dispose();
      for (const s of [...this.#running, ...this.#waiting]) {
        this.#cache.release(s.cache);
        s.reject(e);
      }
      this.#running.length = 0;
      this.#waiting.length = 0;
    } finally {
      ring.dispose();
      this.#loop = null;
    }
  }

  /** Frees the newest running sequence's blocks and puts it first in the queue. */
  #preemptNewest(): Sequence {
    const s = this.#running.pop()!;
    this.#cache.release(s.cache);
    this.#waiting.unshift(s);
    this.#stats.preemptions++;
    return s;
  }

  /** Schedules and records the next step; null when no sequence can take a step now. */
  #record(previous: InFlightStep | null, readback: StepReadback): InFlightStep | null {
    const cache = this.#cache;
    let preempted = false;
    // Sequences at maxTokens only wait for their last token to be read.
    const grows = (s: Sequence) => s.sampled < s.request.maxTokens;
    for (let i = 0; i < this.#running.length; i++) {
      const s = this.#running[i];
      if (!grows(s)) continue;
      while (!cache.reserve(s.cache, s.cache.length + 1)) {
        preempted = true;
        if (this.#preemptNewest() === s) break;
      }
    }
    const decoding = this.#running.filter(grows);
    const admitted: Sequence[] = [];
    while (!preempted && this.#waiting.length > 0 && this.#running.length < this.options.maxSeqs) {
      const s = this.#waiting[0];
      // A preempted sequence comes back once its tokens are all read.
      if (s.tokens.length !== s.sampled) break;
      // Its context and the first token it samples (appended by the next step).
      if (!cache.reserve(s.cache, s.prompt.length + s.tokens.length + 1)) break;
      this.#waiting.shift();
      this.#running.push(s);
      admitted.push(s);
    }
    if (admitted.length + decoding.length === 0) return null;
    this.#stats.peakBlocks = Math.max(this.#stats.peakBlocks, cache.numBlocks - cache.freeBlocks);
    this.#stats.steps++;
    this.#stats.prefills += admitted.length;
    const t0 = performance.now();
    const step = recordStep({
      model: this.model,
      cache,
      kvDtype: this.options.kvDtype ?? "f32",
      sampler: this.#sampler,
      admitted,
      decoding,
      previous,
      readback,
    });
    this.#stats.recordSeconds += (performance.now() - t0) / 1000;
    return step;
  }

  /** Reads the steps' tokens back at once and finishes the sequences that ended. */
  async #collect(steps: InFlightStep[], readback: StepReadback): Promise<void> {
    const words = 2 * readback.stride;
    let data;
    try {
      const t0 = performance.now();
      [data] = await gpu().read([{ buffer: readback.ring.buffer, size: 4 * words * steps.length }]);
      this.#stats.waitSeconds += (performance.now() - t0) / 1000;
    } finally {
      for (const step of steps) step.bufs.dispose();
    }
    steps.forEach((step, k) => {
      const tokens = new Int32Array(data, 4 * words * k, step.rows.length);
      const logProbs = new Float32Array(data, 4 * (words * k + readback.stride), step.rows.length);
      step.rows.forEach((row, i) => {
        const s = row as Sequence;
        if (s.done) {
          this.#stats.dropped++;
          return;
        }
        s.tokens.push(tokens[i]);
        s.logProbs.push(logProbs[i]);
        this.#stats.tokens++;
        if (this.#eos.has(tokens[i])) this.#finish(s, "stop");
        else if (s.tokens.length >= s.request.maxTokens) this.#finish(s, "length");
      });
    });
  }

  #finish(s: Sequence, finishReason: "stop" | "length"): void {
    s.done = true;
    // A sequence preempted before its last token was read finishes from the queue.
    for (const list of [this.#running, this.#waiting]) {
      const at = list.indexOf(s);
      if (at >= 0) list.splice(at, 1);
    }
    this.#cache.release(s.cache);
    const result: EngineResult = { tokens: Int32Array.from(s.tokens), finishReason };
    if (s.request.returnLogProbs) result.logProbs = Float32Array.from(s.logProbs);
    s.resolve(result);
  }
}
