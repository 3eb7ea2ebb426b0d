/// <reference lib="webworker" />
/**
 * The Web Worker of web/rollout.html: joins a distributed run over NATS WebSocket and runs the
 * same rollout worker as `deno task worker` on this tab's WebGPU device, reporting each job.
 */
import { initGpu, registerShaderSources } from "../src/gpu/mod.ts";
import { connectNats, runWorker } from "../src/distributed/mod.ts";
import { SHADERS } from "./shaders.ts";

/** From the page. */
export interface JoinMessage {
  join?: { url: string; prefix: string; seed: string; id: string };
  leave?: true;
}

/** To the page. */
export interface RolloutReport {
  status: "joining" | "working" | "left" | "error";
  adapter?: string;
  jobs?: number;
  /** Engine requests submitted (n per job) and the most jobs decoded at once. */
  requests?: number;
  peakJobs?: number;
  lastJob?: string;
  version?: number;
  error?: string;
}

const post = (r: RolloutReport) => (self as unknown as Worker).postMessage(r);
const stop = new AbortController();

self.onmessage = async (e: MessageEvent<JoinMessage>) => {
  if (e.data.leave) {
    stop.abort();
    return;
  }
  const j = e.data.join!;
  try {
    registerShaderSources(SHADERS);
    const g = await initGpu();
    post({ status: "joining", adapter: g.adapterName });
    const nc = await connectNats(j.url, { nkeySeed: j.seed || null, name: `worker ${j.id}` });
    let jobs = 0;
    post({ status: "working", jobs });
    const stats = await runWorker(nc, {
      prefix: j.prefix,
      workerId: j.id,
      signal: stop.signal,
      onJob: (job, _, s) =>
        post({
          status: "working",
          jobs: ++jobs,
          requests: s.requests,
          peakJobs: s.peakJobs,
          lastJob: job.jobId,
          version: job.version,
        }),
    });
    await nc.close();
    post({ status: "left", jobs: stats.jobs, requests: stats.requests, peakJobs: stats.peakJobs });
  } catch (err) {
    post({ status: "error", error: (err as Error).message });
  }
};
