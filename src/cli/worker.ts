/**
 * `deno task worker --url nats://host:4222 [--prefix webrl.<project>.<experiment>] [--id name]
 * [--nkey-seed SU... | --token T | --creds file] [--max-jobs N] [--batch 8]`: a rollout worker of a
 * distributed run (distributed.backend=nats). It pulls the run's prompt jobs, generates on this
 * process's GPU with the weights version each job names, scores, and publishes trajectories.
 * Credentials may also come from the environment: NATS_NKEY_SEED, NATS_TOKEN.
 */
import { parseArgs } from "node:util";
import { ConfigError } from "../config/mod.ts";
import { connectNats, defaultPrefix, runWorker } from "../distributed/mod.ts";
import { initGpu } from "../gpu/mod.ts";
import { runCli } from "./run.ts";

const USAGE = `usage: deno task worker --url nats://HOST:PORT [--prefix SUBJECT_PREFIX] [--id NAME]
  [--nkey-seed SU... | --token TOKEN | --creds FILE] [--max-jobs N] [--batch 8]
--batch: queued jobs generated together in one batch at most;
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
      batch: { type: "string", default: "8" },
    },
  });
  if (!values.url) throw new ConfigError("--url", "--url is required (e.g. nats://127.0.0.1:4222)");
  if (!(Number(values.batch) >= 1)) {
    throw new ConfigError("--batch", `--batch ${values.batch}: a positive integer`);
  }
  const maxJobs = values["max-jobs"] === undefined ? undefined : Number(values["max-jobs"]);
  if (maxJobs !== undefined && !(Number.isInteger(maxJobs) && maxJobs > 0)) {
    throw new ConfigError("--max-jobs", `--max-jobs ${values["max-jobs"]}: a positive integer`);
  }
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
    batchJobs: Number(values.batch),
    signal: stop.signal,
    onJob: (job, s) => console.log(`job ${job.jobId} (v${job.version}) in ${s.toFixed(2)}s`),
    onWeights: (v, t) =>
      console.log(
        `weights v${v}${t.eager ? " (before its jobs)" : ""}: fetch ${t.fetchS.toFixed(2)}s, ` +
          `decode ${t.decodeS.toFixed(2)}s, build ${t.buildS.toFixed(2)}s`,
      ),
    log: (line) => console.warn(line),
  });
  await nc.drain();
  console.log(`worker ${id}: ${stats.jobs} jobs, ${stats.dropped} dropped`);
}

if (import.meta.main) await runCli("worker", () => main(Deno.args), { usage: USAGE });
