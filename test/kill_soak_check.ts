/**
 * What a killed-and-resumed run must equal: the uninterrupted reference's final checkpoint (byte
 * for byte; extra_state.json but for its config, which names the run's own folders), every step
 * once in metrics.jsonl and in the TensorBoard events with the reference's values (timings and
 * throughput aside), the same files in the checkpoint folder (the newest two checkpoints, no
 * leftover, no lock), and no temporary file in the metrics folder.
 */
import { isDeepStrictEqual } from "node:util";
import { decodeEvent, readRecords } from "../src/tracking/mod.ts";
import { jsonlRecords, loggedSteps, metricsByStep, tree } from "./crash_helpers.ts";

export interface Comparison {
  problems: string[];
  /** Bytes of checkpoint files compared. */
  bytes: number;
  /** metrics.jsonl records compared. */
  records: number;
  /** TensorBoard events compared. */
  events: number;
}

const varies = (tag: string) => tag.startsWith("timing_s/") || tag.startsWith("perf/");

/** The scalar events of the event files in `dir` (not its sub-folders), in file-name order. */
function events(dir: string): { step: number; values: Record<string, number> }[] {
  const names = [...Deno.readDirSync(dir)]
    .filter((e) => e.isFile && e.name.includes("tfevents")).map((e) => e.name).sort();
  return names.flatMap((n) =>
    readRecords(Deno.readFileSync(`${dir}/${n}`)).map(decodeEvent).filter((s) => s.length)
      .map((s) => ({ step: s[0].step, values: Object.fromEntries(s.map((x) => [x.tag, x.value])) }))
  );
}

function byStep(evs: { step: number; values: Record<string, number> }[]) {
  const out = new Map<number, Record<string, number>>();
  for (const { step, values } of evs) {
    const kept = Object.entries(values).filter(([k]) => !varies(k));
    out.set(step, { ...out.get(step), ...Object.fromEntries(kept) });
  }
  return out;
}

function differing(a: Map<number, unknown>, b: Map<number, unknown>, steps: number[]): number[] {
  return steps.filter((s) => !isDeepStrictEqual(a.get(s), b.get(s)));
}

/** Compares the run folders `ref` and `soak` (as makeTinyRun lays them out) after `total` steps. */
export function compareRuns(o: { ref: string; soak: string; total: number }): Comparison {
  const problems: string[] = [];
  const out: Comparison = { problems, bytes: 0, records: 0, events: 0 };
  const steps = Array.from({ length: o.total }, (_, i) => i + 1);
  const check = (what: string, f: () => void) => {
    try {
      f();
    } catch (e) {
      problems.push(`${what}: ${(e as Error).message}`);
    }
  };

  const ckA = `${o.ref}/ckpt`, ckB = `${o.soak}/ckpt`;
  check("checkpoint folder", () => {
    const a = tree(ckA), b = tree(ckB);
    const extra = b.filter((n) => !a.includes(n)), missing = a.filter((n) => !b.includes(n));
    if (extra.length || missing.length) {
      throw new Error(`left behind: [${extra.join(", ")}]; missing: [${missing.join(", ")}]`);
    }
    const kept = b.filter((n) => /^global_step_\d+$/.test(n));
    const newest = [o.total - 1, o.total].map((s) => `global_step_${s}`);
    if (!isDeepStrictEqual(kept, newest)) throw new Error(`kept ${kept.join(", ")}`);
    const latest = Deno.readTextFileSync(`${ckB}/latest_checkpointed_iteration.txt`);
    if (latest !== String(o.total)) throw new Error(`tracker names ${latest}, not ${o.total}`);
  });
  const last = `global_step_${o.total}`;
  const runA = `${o.ref}/outputs/webrl_examples/ref`,
    runB = `${o.soak}/outputs/webrl_examples/soak`;
  check("the reference run", () => {
    // Weight decay alone would change the weights; a gradient makes the comparisons telling.
    const m = metricsByStep(jsonlRecords(`${runA}/metrics.jsonl`));
    const flat = steps.filter((s) => !((m.get(s)?.["actor/grad_norm"] ?? 0) > 0));
    if (flat.length) throw new Error(`no actor gradient at steps ${flat.join(" ")}`);
  });
  for (const rel of tree(`${ckA}/${last}`).filter((n) => n.endsWith(".safetensors"))) {
    check(`${last}/${rel}`, () => {
      const a = Deno.readFileSync(`${ckA}/${last}/${rel}`);
      const b = Deno.readFileSync(`${ckB}/${last}/${rel}`);
      out.bytes += a.length;
      const at = a.findIndex((x, i) => x !== b[i]);
      if (a.length !== b.length || at >= 0) {
        throw new Error(`differs (${b.length} vs ${a.length} bytes, first at byte ${at})`);
      }
    });
  }
  check(`${last}/extra_state.json`, () => {
    const read = (dir: string) => {
      const { config: _, ...rest } = JSON.parse(Deno.readTextFileSync(`${dir}/extra_state.json`));
      return rest;
    };
    const a = read(`${ckA}/${last}`), b = read(`${ckB}/${last}`);
    if (!isDeepStrictEqual(a, b)) throw new Error(`${JSON.stringify(b)} vs ${JSON.stringify(a)}`);
  });

  check("metrics.jsonl", () => {
    const ra = jsonlRecords(`${runA}/metrics.jsonl`), rb = jsonlRecords(`${runB}/metrics.jsonl`);
    out.records += rb.length;
    const logged = loggedSteps(rb);
    if (!isDeepStrictEqual(logged, steps)) throw new Error(`steps logged: ${logged.join(" ")}`);
    const bad = differing(metricsByStep(ra), metricsByStep(rb), steps);
    if (bad.length) throw new Error(`values differ from the reference at steps ${bad.join(" ")}`);
  });
  check("TensorBoard events", () => {
    const ea = events(`${runA}/tensorboard`), eb = events(`${runB}/tensorboard`);
    out.events += eb.length;
    // In file-name order, as TensorBoard reads them: a step going back would hide later ones.
    const main = eb.filter((e) => "training/global_step" in e.values).map((e) => e.step);
    if (!isDeepStrictEqual(main, steps)) throw new Error(`steps logged: ${main.join(" ")}`);
    const bad = differing(byStep(ea), byStep(eb), steps);
    if (bad.length) throw new Error(`values differ from the reference at steps ${bad.join(" ")}`);
  });
  check("metrics folder", () => {
    const tmp = tree(runB).filter((n) => /\.tmp-\d+$/.test(n));
    if (tmp.length) throw new Error(`temporary files left: ${tmp.join(", ")}`);
  });
  return out;
}
