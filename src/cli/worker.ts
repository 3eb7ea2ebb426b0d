/**
 * `deno task worker --url nats://host:4222 [--prefix webrl.<project>.<experiment>] [--id name]
 * [--nkey-seed SU... | --token T | --creds file] [--max-jobs N] [--in-flight 8]
 * [--max-num-seqs N] [--kv-cache-tokens N]`: a rollout worker of a distributed run
 * (distributed.backend=nats). It pulls the run's prompt jobs, decodes them on this process's GPU
 * through a continuous-batching engine of the weights version each job names, scores, and
 * publishes each job's trajectory as soon as its samples are done.
 * Credentials may also come from the environment: NATS_NKEY_SEED, NATS_TOKEN.
 */
import { parseArgs } from "node:util";
import { ConfigError } from "../config/mod.ts";
import { connectNats, defaultPrefix, runWorker } from "../distributed/mod.ts";
import { initGpu } from "../gpu/mod.ts";
import { runCli } from "./run.ts";

const USAGE = `usage: deno task worker --url nats://HOST:PORT [--prefix SUBJECT_PREFIX] [--id NAME]
  [--nkey-seed SU... | --token TOKEN | --creds FILE] [--max-jobs N] [--in-flight 8]
  [--max-num-seqs N] [--kv-cache-tokens N]
--in-flight: jobs decoded at once at most (pulled while fewer run; each joins the engine at once);
--max-num-seqs: sequences the engine decodes together at most; default: the run's
  actor_rollout_ref.rollout.max_num_seqs;
--kv-cache-tokens: KV cache positions per engine; default: the run's rollout.kv_cache_tokens, and
  when that is null, room for the in-flight jobs' samples at the longest prompt plus response length;
prefix caching follows the run's rollout.enable_prefix_caching;
--prefix defaults to ${defaultPrefix("webrl_examples", "arithmetic")} (the default run's);
a trainer prints the prefix of its run at start. NATS_NKEY_SEED / NATS_TOKEN work as well.`;

export async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      url: { type: "string" },
      prefix: { type: "string" },
      id: { type: "string" },
      "nkey-seed": { type: "string" },
      token: { type: "string" },
      creds: { type: "string" },
      "max-jobs": { type: "string" },
      "in-flight": { type: "string", default: "8" },
      "max-num-seqs": { type: "string" },
      "kv-cache-tokens": { type: "string" },
    },
  });
  if (!values.url) throw new ConfigError("--url", "--url is required (e.g. nats://127.0.0.1:4222)");
  const maxJobs = positive(values, "max-jobs");
  const kvCacheTokens = positive(values, "kv-cache-tokens") ?? null;
  const g = await initGpu();
  const id = values.id ?? `${Deno.hostname()}-${Deno.pid}`;
  const nc = await connectNats(values.url, {
    name: `worker ${id}`,
    nkeySeed: values["nkey-seed"] ?? Deno.env.get("NATS_NKEY_SEED") ?? null,
    token: values.token ?? Deno.env.get("NATS_TOKEN") ?? null,
    creds: values.creds ? await Deno.readTextFile(values.creds) : null,
  });
  const prefix = values.prefix ?? defaultPrefix("webrl_examples", "arithmetic");
  console.log(`worker ${id} on ${g.adapterName}: jobs of ${prefix} at ${values.url}`);
  const stop = new AbortController();
  Deno.addSignalListener("SIGINT", () => stop.abort());
  const stats = await runWorker(nc, {
    prefix,
    workerId: id,
    maxJobs,
    maxInFlightJobs: positive(values, "in-flight"),
    maxNumSeqs: positive(values, "max-num-seqs"),
    kvCacheTokens,
    kvCacheTokensKey: "--kv-cache-tokens",
    signal: stop.signal,
    onJob: (job, s) => console.log(`job ${job.jobId} (v${job.version}) in ${s.toFixed(2)}s`),
    onEngine: (v, e) =>
      console.log(
        `engine for v${v}: ${e.options.numBlocks} blocks of ${e.options.blockSize}, ` +
          `${e.options.maxSeqs} sequences at most`,
      ),
    onWeights: (v, t) =>
      console.log(
        `weights v${v}${t.eager ? " (before its jobs)" : ""}: fetch ${t.fetchS.toFixed(2)}s, ` +
          `decode ${t.decodeS.toFixed(2)}s, build ${t.buildS.toFixed(2)}s`,
      ),
    log: (line) => console.warn(line),
  });
  await nc.drain();
  const perStep = stats.engineSteps > 0 ? stats.engineTokens / stats.engineSteps : 0;
  console.log(
    `worker ${id}: ${stats.jobs} jobs, ${stats.dropped} dropped; ${stats.requests} requests, ` +
      `up to ${stats.peakJobs} jobs at once, ${stats.engines} engines, ` +
      `${perStep.toFixed(1)} tokens per engine step`,
  );
}

/** The integer value of flag `name` (undefined when not given); else a ConfigError naming it. */
function positive(values: Record<string, unknown>, name: string): number | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  const x = Number(v);
  if (!(Number.isInteger(x) && x > 0)) {
    throw new ConfigError(`--${name}`, `--${name} ${v}: a positive integer`);
  }
  return x;
}

if (import.meta.main) await runCli("worker", () => main(Deno.args), { usage: USAGE });
