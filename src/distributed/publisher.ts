/**
 * Publishes weight versions from a thread of its own (Deno): packing a model as f16 and storing it
 * takes seconds at the 0.5B shape, and with `max_staleness` >= 1 that time overlaps the wait for
 * the workers' next trajectories instead of adding to the step. The arrays handed over are
 * transferred, not copied; `onReturn` gets their buffers back once stored, for reuse.
 */
import type { ConnectOptions } from "./connect.ts";
import type { PublisherInit, PublishReply, PublishRequest } from "./publisher_worker.ts";
import type { PublishTimes } from "./weight_stream.ts";
import type { PackedWeights } from "./weights.ts";

export class BackgroundPublisher {
  #worker: Worker;
  #waiting = new Map<number, { resolve(t: PublishTimes): void; reject(e: Error): void }>();

  constructor(
    o: { url: string; connect: ConnectOptions; prefix: string; keepVersions: number },
    onReturn?: (buffers: ArrayBuffer[]) => void,
  ) {
    this.#worker = new Worker(new URL("./publisher_worker.ts", import.meta.url), {
      type: "module",
    });
    this.#worker.onmessage = (e: MessageEvent<PublishReply>) => {
      const w = this.#waiting.get(e.data.version);
      this.#waiting.delete(e.data.version);
      if (e.data.buffers.length > 0) onReturn?.(e.data.buffers);
      if (e.data.error !== undefined) {
        w?.reject(new Error(`publishing weights v${e.data.version}: ${e.data.error}`));
      } else w?.resolve(e.data.times!);
    };
    const init: PublisherInit = { ...o };
    this.#worker.postMessage({ init });
  }

  /**
   * Starts publishing `w`; resolves once stored, with where the time went. With `transfer` the
   * arrays' buffers move to the thread (the caller gives them up; `onReturn` hands them back),
   * else they are copied.
   */
  publish(w: PackedWeights, transfer = false): Promise<PublishTimes> {
    const req: PublishRequest = { ...w, tensors: [...w.tensors] };
    const buffers = new Set<ArrayBuffer>();
    if (transfer) { for (const t of w.tensors.values()) buffers.add(t.buffer as ArrayBuffer); }
    return new Promise((resolve, reject) => {
      this.#waiting.set(w.version, { resolve, reject });
      this.#worker.postMessage({ publish: req }, [...buffers]);
    });
  }

  close(): void {
    this.#worker.terminate();
  }
}
