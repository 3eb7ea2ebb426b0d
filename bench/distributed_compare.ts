/**
 * The scale-out figure in one command: `distributed_bench.ts` once on one GPU (`--workers=0`) and
 * once with rollout workers, one process after the other on the same machine, then the ratio of
 * their mean step times (steps 2.., as the bench's summary) and of their tokens/s.
 *
 *   deno run -A bench/distributed_compare.ts --shape=0.5b --workers=1 --pin --staleness=1 \
 *     --bypass=1 --steps=5 [--baseline-bypass=0|1|0,1] [--nats-server=PATH]
 *
 * Every other flag goes to both runs; `--baseline-bypass` sets the one-GPU run's bypass mode
 * (default: the same as the distributed run's); a list runs one baseline per mode and prints a
 * ratio line against each.
 */
const bench = new URL("./distributed_bench.ts", import.meta.url).pathname;
const value = (name: string) => Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
const workers = value("workers") ?? "1", bypass = value("bypass") ?? "0";
const baselineModes = (value("baseline-bypass") ?? bypass).split(",");
const shared = Deno.args.filter((a) =>
  !/^--(workers|bypass|baseline-bypass|staleness)=/.test(a) && a !== "--pin"
);

type Summary = Record<string, number | string | boolean>;

async function summary(extra: string[]): Promise<Summary> {
  const args = ["run", "-A", ...(Deno.args.includes("--cached-only") ? ["--cached-only"] : [])];
  const out = await new Deno.Command(Deno.execPath(), {
    args: [...args, bench, ...shared.filter((a) => a !== "--cached-only"), ...extra],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const lines = new TextDecoder().decode(out.stdout).split("\n");
  for (const l of lines) if (l.startsWith("{")) console.log(l); // the runs' own lines
  const last = lines.filter((l) => l.includes('"distributed_summary"')).at(-1);
  if (!out.success || !last) {
    throw new Error(`distributed_bench.ts ${extra.join(" ")} failed (exit ${out.code})`);
  }
  return JSON.parse(last) as Summary;
}

const baselines: Summary[] = [];
for (const mode of baselineModes) {
  baselines.push(await summary(["--workers=0", `--bypass=${mode}`]));
}
const many = await summary([
  `--workers=${workers}`,
  `--bypass=${bypass}`,
  ...Deno.args.filter((a) => a.startsWith("--staleness=") || a === "--pin"),
]);
const ratio = (a: unknown, b: unknown) => Math.round((Number(a) / Number(b)) * 1000) / 1000;
for (const one of baselines) {
  console.log(JSON.stringify({
    fig: "distributed_compare",
    shape: one.shape,
    workers: Number(workers),
    staleness: many.staleness,
    bypass: many.bypass,
    baseline_bypass: one.bypass,
    one_gpu_step_s: one.step_s,
    distributed_step_s: many.step_s,
    step_ratio: ratio(many.step_s, one.step_s),
    tokens_per_s_ratio: ratio(many.tokens_per_s, one.tokens_per_s),
  }));
}
