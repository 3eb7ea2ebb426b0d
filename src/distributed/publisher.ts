/**
 * Publishes weight versions from a thread of its own (Deno): packing a model as f16 and storing it
 * in the object store (which hashes every chunk in JavaScript) takes seconds at the 0.5B shape,
 * and with `max_staleness` >= 1 that time overlaps the wait for the workers' next trajectories
 * instead of adding to the step. The arrays handed over are transferred, not copied.
 */
import type { ConnectOptions } from "./connect.ts";
import type { PublisherInit, PublishRequest } from "./publisher_worker.ts";

export class BackgroundPublisher {
  #worker: Worker;
  #waiting = new Map<number, { resolve(bytes: number): void; reject(e: Error): void }>();

  constructor(o: { url: string; connect: ConnectOptions; prefix: string; keepVersions: number }) {
    this.#worker = new Worker(new URL("./publisher_worker.ts", import.meta.url), {
      type: "module",
    });
    this.#worker.onmessage = (
      e: MessageEvent<{ version: number; bytes?: number; error?: string }>,
    ) => {
      const w = this.#waiting.get(e.data.version);
      this.#waiting.delete(e.data.version);
      if (e.data.error !== undefined) {
        w?.reject(new Error(`publishing weights v${e.data.version}: ${e.data.error}`));
      } else w?.resolve(e.data.bytes!);
    };
    const init: PublisherInit = { ...o };
    this.#worker.postMessage({ init });
  }

  /** Starts publishing `version`; resolves with the blob's bytes once stored. */
  publish(
    version: number,
    modelConfig: string,
    tensors: Map<string, Float32Array>,
  ): Promise<number> {
    const req: PublishRequest = { version, modelConfig, tensors: [...tensors] };
    const buffers = new Set<ArrayBuffer>();
    for (const t of tensors.values()) {
      if (t.byteOffset === 0 && t.byteLength === t.buffer.byteLength) {
        buffers.add(t.buffer as ArrayBuffer);
      }
    }
    return new Promise((resolve, reject) => {
      this.#waiting.set(version, { resolve, reject });
      this.#worker.postMessage({ publish: req }, [...buffers]);
    });
  }

  close(): void {
    this.#worker.terminate();
  }
}
