/**
 * Continuous batching over a paged KV cache (vLLM's scheduling, recompute preemption): requests
 * are submitted at any time and each resolves as soon as its sequence ends. A step loop runs
 * while requests exist: the running sequences get the block their next token needs (when the
 * pool runs dry the most recently admitted one is preempted: its blocks freed, it goes back to
 * the front of the queue to be prefilled again with its prompt and the tokens it has so far), then
 * waiting requests are admitted into free slots while blocks allow (unless this step preempted),
 * then one GPU step (engine_step.ts) prefills the admitted, decodes the running and samples a
 * token for each; sequences that sample EOS or reach maxTokens finish, their slot and blocks
 * free for the next step. The sampled tokens come back in one small read per `stepsInFlight` / 2
 * steps, made while the next steps are recorded (a read costs about a decode step's GPU time of
 * latency in Deno, and waits for the queue to empty), so the GPU runs each step while the host
 * records the next and at most `stepsInFlight` steps are unread. Lengths and maxTokens
 * are known without the tokens, so only an EOS is seen late: that sequence's tokens of the steps
 * already recorded are dropped (stats.dropped) and its blocks are freed once the EOS is read.
 * Requests with identical prompt ids (the n samples of a prompt) share one prefill of it and its
 * full blocks (engine_prefix.ts; `sharePrefixes`). With `prefixCaching` (vLLM's automatic prefix
 * caching, engine_prefix_cache.ts) full blocks stay in the pool keyed by content: a later
 * admission whose context starts with them prefills only the rest (engine_prefill.ts).
 */
import type { CausalLM, PagedKvCache } from "../nn/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { Tensor } from "../tensor/mod.ts";
import { prefixKey, PrefixTable } from "./engine_prefix.ts";
import { publishPrefilled, publishWritten, reserveCached } from "./engine_prefix_cache.ts";
import {
  type InFlightStep,
  recordStep,
  releaseSamples,
  type StepReadback,
  type StepSequence,
} from "./engine_step.ts";
import {
  ENGINE_BATCH_STEPS_IN_FLIGHT,
  ENGINE_BLOCK_SIZE,
  ENGINE_STEPS_IN_FLIGHT,
  type EngineOptions,
  enginePool,
  type EngineRequest,
  type EngineResult,
  type EngineStats,
  requestProblem,
  samplerConfig,
  zeroStats,
} from "./engine_types.ts";
import type { SamplerConfig } from "./sampler.ts";

export { ENGINE_BATCH_STEPS_IN_FLIGHT, ENGINE_BLOCK_SIZE, ENGINE_STEPS_IN_FLIGHT };
export type { EngineOptions, EngineRequest, EngineResult, EngineStats };

interface Sequence extends StepSequence {
  request: EngineRequest;
  /** Its prompt as a key of shared prompts ("" when the engine shares none). */
  key: string;
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
  readonly #prefixes: PrefixTable;
  readonly #share: boolean;
  readonly #caching: boolean;
  /** In admission order: the last is the first preempted. */
  readonly #running: Sequence[] = [];
  #loop: Promise<void> | null = null;
  #closed = false;
  readonly #stats = zeroStats();

  constructor(readonly model: CausalLM, readonly options: EngineOptions) {
    this.#cache = enginePool(model, options);
    this.#sampler = samplerConfig(options);
    this.#eos = new Set(options.eosTokenIds);
    this.#share = options.sharePrefixes ?? true;
    this.#caching = options.prefixCaching ?? true;
    this.#prefixes = new PrefixTable(this.#cache, this.#caching);
  }

  /** Queues a request; resolves when its sequence ends. */
  submit(request: EngineRequest): Promise<EngineResult> {
    if (this.#closed) return Promise.reject(new Error("Engine: submit after close"));
    const prompt = Int32Array.from(request.promptIds);
    const problem = requestProblem(prompt, request, {
      vocab: this.model.config.vocabSize,
      blockSize: this.#cache.blockSize,
      numBlocks: this.#cache.numBlocks,
    });
    if (problem) return Promise.reject(new Error(`Engine.submit: ${problem}`));
    const key = this.#share ? prefixKey(prompt) : "";
    return new Promise<EngineResult>((resolve, reject) => {
      if (this.#share) this.#prefixes.wait(key);
      this.#waiting.push({
        prompt,
        key,
        prefix: null,
        cached: 0,
        probe: null,
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
      cachedBlocks: this.#cache.cachedBlocks,
      running: this.#running.length,
      waiting: this.#waiting.length,
    };
  }

  /** Refuses new requests, waits for the submitted ones to finish, frees the cache. */
  async close(): Promise<void> {
    const first = !this.#closed;
    this.#closed = true;
    await this.#loop;
    this.#cache.clearPrefixCache();
    if (first) this.#cache.dispose();
  }

  /** Empties the prefix cache (vLLM's reset_prefix_cache; for weights changed under the engine). */
  resetPrefixCache(): void {
    this.#cache.clearPrefixCache();
  }

  async #run(): Promise<void> {
    const depth = this.options.stepsInFlight ?? ENGINE_STEPS_IN_FLIGHT;
    const stride = this.options.maxSeqs;
    // A window's tokens are read while the next window is recorded: a read in Deno waits for the
    // queue to empty, so a read awaited before recording more left the GPU idle until the host had
    // recorded the next step. Windows of half the depth keep at most `depth` steps unread; a
    // depth of 1 reads each step before recording the next.
    const overlap = depth > 1;
    const span = overlap ? Math.floor(depth / 2) : 1;
    // One window's tokens and log-probs: its read's copy is recorded before the next window's
    // writes, so every window takes the same slots.
    const ring = Tensor.empty([span * 2 * stride], "i32", "engine.readback").keep();
    // The newest step (its sampled tokens feed the next one), the steps recorded since the last
    // read began, and that read.
    let previous: InFlightStep | null = null;
    const window: InFlightStep[] = [];
    let reading: Promise<void> | null = null;
    try {
      await null; // requests submitted in the same tick start together
      while (this.#waiting.length > 0 || this.#running.length > 0 || reading) {
        if (this.#waiting.length === 0 && this.#running.length === 0) {
          // Only a read is left; requests submitted meanwhile are taken by this loop.
          const r = reading;
          reading = null;
          await this.#waitFor(r);
          continue;
        }
        const readback = { ring, slot: window.length, stride };
        const next = this.#record(previous, readback);
        if (next) {
          if (reading) this.#stats.stepsWhileReading++;
          if (previous) releaseSamples(previous);
          previous = next;
          window.push(next);
          if (window.length < span) continue;
        }
        // The window is full, or no step can run until tokens come back.
        const before = reading;
        reading = null;
        if (before) await this.#waitFor(before);
        // The read's copy is recorded now, ahead of the next window's writes to the ring.
        if (window.length > 0) reading = this.#collect(window.splice(0), readback);
        if (!next || !overlap) {
          if (!before && !reading) throw new Error("Engine: no step can run (a scheduling fault)");
          const r = reading;
          reading = null;
          await this.#waitFor(r);
        }
      }
    } catch (e) {
      await reading?.catch(() => {});
      if (previous) releaseSamples(previous);
      for (const step of window) releaseSamples(step);
      for (const s of [...this.#running, ...this.#waiting]) {
        this.#cache.release(s.cache);
        s.prefix = null;
        s.reject(e);
      }
      this.#prefixes.clear();
      this.#cache.clearPrefixCache();
      this.#running.length = 0;
      this.#waiting.length = 0;
    } finally {
      ring.dispose();
      this.#loop = null;
    }
  }

  /** Awaits a read, counting the host's wait. */
  async #waitFor(read: Promise<void> | null): Promise<void> {
    const t0 = performance.now();
    await read;
    this.#stats.waitSeconds += (performance.now() - t0) / 1000;
  }

  /** Frees the newest running sequence's blocks and puts it first in the queue. */
  #preemptNewest(): Sequence {
    const s = this.#running.pop()!;
    this.#release(s);
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
      const fresh = s.tokens.length === 0, C = s.prompt.length + s.tokens.length;
      // A fresh request shares its prompt with others of the same prompt, running or waiting.
      const share = fresh && this.#share && this.#prefixes.shares(s.key);
      // Its context and the first token it samples (appended by the next step).
      if (share ? !this.#prefixes.join(s, s.key) : !this.#reserve(s, C)) break;
      if (fresh && this.#share) this.#prefixes.admitted(s.key);
      this.#waiting.shift();
      this.#running.push(s);
      admitted.push(s);
      this.#stats.promptTokens += C;
      if (!share) this.#count(C, s.cached);
    }
    if (admitted.length + decoding.length === 0) return null;
    const prefixes = this.#prefixes.takeCreated();
    for (const e of prefixes) this.#count(e.ids.length, e.cached);
    this.#stats.peakBlocks = Math.max(this.#stats.peakBlocks, cache.numBlocks - cache.freeBlocks);
    this.#stats.steps++;
    const t0 = performance.now();
    const step = recordStep({
      prefixes,
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
    // Later steps (recorded after this one) may read what this one prefilled.
    if (this.#caching) publishPrefilled(cache, prefixes, admitted);
    return step;
  }

  /**
   * Gives `s` (no blocks) the blocks its context of C tokens and the first token it samples need,
   * the prefix cache's first where caching is on; false, taking nothing, when the pool is short.
   */
  #reserve(s: Sequence, C: number): boolean {
    if (this.#caching) return reserveCached(this.#cache, s, C);
    return this.#cache.reserve(s.cache, C + 1);
  }

  /** One prefill of `tokens` context tokens, `cached` of them held from the prefix cache. */
  #count(tokens: number, cached: number): void {
    this.#stats.prefills++;
    this.#stats.prefillTokens += tokens - cached;
    this.#stats.cachedTokens += cached;
  }

  /** Publishes `s`'s written full blocks, then frees its blocks and its hold on a shared prompt. */
  #release(s: Sequence): void {
    if (this.#caching) publishWritten(this.#cache, s);
    this.#cache.release(s.cache);
    this.#prefixes.leave(s);
  }

  /** Reads the steps' tokens back at once and finishes the sequences that ended. */
  async #collect(steps: InFlightStep[], readback: StepReadback): Promise<void> {
    const words = 2 * readback.stride;
    let data;
    try {
      [data] = await gpu().read([{ buffer: readback.ring.buffer, size: 4 * words * steps.length }]);
    } finally {
      for (const step of steps) releaseSamples(step);
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
    this.#release(s);
    const result: EngineResult = { tokens: Int32Array.from(s.tokens), finishReason };
    if (s.request.returnLogProbs) result.logProbs = Float32Array.from(s.logProbs);
    s.resolve(result);
  }
}
