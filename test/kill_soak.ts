/**
 * A random-SIGKILL soak of `deno task train`: an uninterrupted reference run, then a second run
 * folder started again and again with resume_mode=auto and SIGKILLed until it finishes. Kills
 * come at the trainer's kill points (WEBRL_KILL_DURING_{SAVE,PRUNE,LOG}) and at seeded random
 * delays scaled by the reference's measured setup and step times. The finished run must equal the
 * reference: final checkpoint bytes, every step once in metrics.jsonl and the TensorBoard events
 * with the same values, nothing left behind (kill_soak_check.ts).
 *
 *   deno run -A test/kill_soak.ts --kills 50 --seed 1 [--steps 20] [--keep]
 */
import { mulberry32, randInt, shuffled } from "../src/tensor/mod.ts";
import { makeTinyRun } from "./tiny_run.ts";
import { readRecords } from "../src/tracking/mod.ts";
import { jsonlRecords, trainKilled, tree } from "./crash_helpers.ts";
import { compareRuns } from "./kill_soak_check.ts";

const KINDS = ["save", "prune", "log"] as const;
type Targeted = typeof KINDS[number];
/** Where a random kill landed, told by what it left on disk. */
type Landed = "save" | "prune" | "log" | "setup" | "step";

/**
 * The share of digits and lower-case letters in a response: varied scores, so the actor and the
 * critic learn (a class this broad is rarely missing from every sample of a step).
 */
const REWARD = `export function compute_score(_source, solution) {
  return solution.length ? (solution.match(/[0-9a-z]/g) ?? []).length / solution.length : 0;
}
`;

export interface SoakOptions {
  kills: number;
  seed: number;
  /** trainer.total_training_steps of both runs. */
  steps?: number;
  /** Keep the temporary folder (its path is in the summary). */
  keep?: boolean;
  print?: (line: string) => void;
}

export interface SoakResult {
  kills: number;
  /** Kills at WEBRL_KILL_DURING_{SAVE,PRUNE,LOG}. */
  atPoints: Record<Targeted, number>;
  /** Kills at random delays, by where they landed. */
  random: Record<Landed, number>;
  /** Random delays that came after the run reached its last step's log kill point. */
  late: number;
  resumes: number;
  bytesCompared: number;
  wallS: number;
  problems: string[];
  summary: string;
}

/** `timing_s/step` of `step` in a metrics.jsonl, skipping a torn line; undefined if absent. */
function stepSeconds(path: string, step: number): number | undefined {
  let text = "";
  try {
    text = Deno.readTextFileSync(path);
  } catch { /* nothing logged yet */ }
  for (const line of text.split("\n")) {
    try {
      const r = JSON.parse(line);
      if (r.step === step && typeof r.data["timing_s/step"] === "number") {
        return r.data["timing_s/step"];
      }
    } catch { /* a torn line */ }
  }
  return undefined;
}

function tracker(ckpt: string): number {
  try {
    return Number(Deno.readTextFileSync(`${ckpt}/latest_checkpointed_iteration.txt`));
  } catch {
    return 0;
  }
}

/**
 * Where the process `pid` was killed: in a save or a prune (their leftovers carry its pid), in a
 * log write (a torn last line), else in setup (it had not yet opened its TensorBoard file) or in
 * a step.
 */
function landed(ckpt: string, runDir: string, pid: number): Landed {
  const names = tree(ckpt);
  const save = new RegExp(`^(global_step_\\d+|latest_checkpointed_iteration\\.txt)\\.tmp-${pid}$`);
  if (names.some((n) => save.test(n))) return "save";
  if (names.some((n) => new RegExp(`(^|/)\\.deleting-.+-${pid}$`).test(n))) return "prune";
  const tb = `${runDir}/tensorboard`;
  const mine = (() => {
    try {
      return [...Deno.readDirSync(tb)].find((e) => e.name.includes(`.${pid}.`))?.name;
    } catch {
      return undefined;
    }
  })();
  if (!mine) return "setup";
  const events = Deno.readFileSync(`${tb}/${mine}`);
  const whole = readRecords(events, { stopAtDamage: true }).reduce((n, r) => n + r.length + 16, 0);
  let text = "";
  try {
    text = Deno.readTextFileSync(`${runDir}/metrics.jsonl`);
  } catch { /* no step logged yet */ }
  return whole !== events.length || (text && !text.endsWith("\n")) ? "log" : "step";
}

export async function killSoak(o: SoakOptions): Promise<SoakResult> {
  const t0 = performance.now();
  const print = o.print ?? (() => {});
  const total = o.steps ?? 20;
  const rand = mulberry32(o.seed);
  const root = Deno.makeTempDirSync({ prefix: "webrl_soak_" });
  const ref = await makeTinyRun(`${root}/ref`);
  const soak = await makeTinyRun(`${root}/soak`);
  // The random tiny policy never solves the task; a graded score gives every step a gradient.
  Deno.writeTextFileSync(`${root}/reward.ts`, REWARD);
  const common = [
    `custom_reward_function.path=${root}/reward.ts`,
    "algorithm.adv_estimator=gae",
    "actor_rollout_ref.rollout.n=1",
    "actor_rollout_ref.actor.ppo_mini_batch_size=4",
    "critic.ppo_mini_batch_size=4",
    `trainer.total_training_steps=${total}`,
    "trainer.save_freq=1",
    "trainer.test_freq=-1",
    "trainer.max_actor_ckpt_to_keep=2",
    "trainer.max_critic_ckpt_to_keep=1",
    "trainer.logger=[file,tensorboard]",
    "trainer.resume_mode=auto",
  ];
  const problems: string[] = [];

  // The reference, timed: seconds from the adapter line to the first step, and per step.
  let tAdapter = 0;
  const full = await trainKilled(`${root}/ref`, [...ref.overrides, ...common], {
    onAdapter: () => tAdapter = performance.now(),
  });
  const tEnd = performance.now();
  if (full.code !== 0) throw new Error(`the reference run failed:\n${full.text}`);
  const refRun = `${root}/ref/outputs/webrl_examples/ref`;
  let stepsS = 0;
  for (const r of jsonlRecords(`${refRun}/metrics.jsonl`)) {
    stepsS += (r.data["timing_s/step"] ?? 0) + (r.data["timing_s/save_checkpoint"] ?? 0);
  }
  const stepS = stepsS / total;
  const setupS = Math.max(0.05, (tEnd - tAdapter) / 1000 - stepsS);
  print(`reference: ${total} steps, setup ${setupS.toFixed(2)} s, ${stepS.toFixed(3)} s/step`);

  const nEach = o.kills >= 4 ? Math.max(1, Math.round(o.kills / 6)) : 0;
  const plan: (Targeted | "random")[] = shuffled([
    ...KINDS.flatMap((k) => Array<Targeted>(nEach).fill(k)),
    ...Array<"random">(o.kills - 3 * nEach).fill("random"),
  ], rand);
  const atPoints: Record<Targeted, number> = { save: 0, prune: 0, log: 0 };
  const random: Record<Landed, number> = { save: 0, prune: 0, log: 0, setup: 0, step: 0 };
  const ckpt = `${root}/soak/ckpt`, soakRun = `${root}/soak/outputs/webrl_examples/soak`;
  const args = [...soak.overrides, ...common];
  let resumes = 0, kills = 0, late = 0;
  // The machine's pace now against the reference's (other work shares it): the first step of
  // each attempt against the reference's first step, both with the shaders' compilation.
  const firstRef = stepSeconds(`${refRun}/metrics.jsonl`, 1) ?? stepS;
  let pace = 1;

  for (let i = 0; i < plan.length; i++) {
    const latest = tracker(ckpt), left = total - latest;
    // Keep steps for the kills still to come: each may move the run on by about `share` steps.
    const share = Math.max(0, (left - 1) / (plan.length - i));
    const ahead = Math.min(2, Math.floor(2 * share), left - 1);
    let kind = plan[i];
    // Pruning starts at step 3 (two actor checkpoints kept) and must leave a step to run.
    const pruneAt = Math.max(latest + 1 + Math.max(0, ahead - 1), 3);
    if (kind === "prune" && pruneAt > total - 1) kind = "log";
    let at = kind === "prune" ? pruneAt : latest + 1 + randInt(rand, 0, ahead);
    let killAfterMs: number | undefined;
    if (kind === "random") {
      const u = -0.4 + rand() * (Math.min(0.6 + 2 * share, left - 0.5) + 0.4);
      killAfterMs = Math.max(0, pace * (setupS + u * stepS) * 1000);
      at = total; // a timer that comes late still kills the run before its last checkpoint
    }
    const point = kind === "random" ? "log" : kind;
    const env = { [`WEBRL_KILL_DURING_${point.toUpperCase()}`]: String(at) };
    const a = await trainKilled(`${root}/soak`, args, { env, killAfterMs });
    if (/resumed from global_step_\d+/.test(a.text)) resumes++;
    const what = kind === "random" ? `random +${killAfterMs!.toFixed(0)} ms` : `during ${kind}`;
    if (a.signal !== "SIGKILL") {
      problems.push(`kill ${i + 1} (${what}) did not happen (exit ${a.code}):\n${a.text}`);
      break;
    }
    kills++;
    const first = stepSeconds(`${soakRun}/metrics.jsonl`, latest + 1);
    if (first !== undefined) pace = (pace + first / firstRef) / 2;
    const where = landed(ckpt, soakRun, a.pid);
    if (a.timed) {
      random[where]++;
      print(`kill ${i + 1}: ${what}, in ${where} (checkpoint ${tracker(ckpt)})`);
      continue;
    }
    const how = kind === "random" ? `${what} came late: at` : "at";
    if (kind === "random") late++;
    // A kill point before the checkpoint of `at` leaves the one before as the latest.
    if (
      where !== (point === "log" ? "step" : point) || tracker(ckpt) !== at - +(point !== "prune")
    ) {
      problems.push(`kill ${i + 1} (${what}, at step ${at}) left no trace of it`);
    }
    atPoints[point]++;
    print(`kill ${i + 1}: ${how} the ${point} of step ${at} (checkpoint ${tracker(ckpt)})`);
  }

  // No kill lets the run save its last step: this run finishes it.
  const last = await trainKilled(`${root}/soak`, args);
  if (/resumed from global_step_\d+/.test(last.text)) resumes++;
  if (last.code !== 0) problems.push(`the final run failed (exit ${last.code}):\n${last.text}`);
  const cmp = compareRuns({ ref: `${root}/ref`, soak: `${root}/soak`, total });
  problems.push(...cmp.problems);
  const wallS = (performance.now() - t0) / 1000;
  const by = (r: Record<string, number>) =>
    Object.entries(r).map(([k, v]) => `${k} ${v}`).join(", ");
  const summary = [
    `kills: ${kills}; at the kill points: ${by(atPoints)}; at random delays, landed in: ` +
    `${by(random)}` +
    (late ? `; random delays that came late, met the last step's log: ${late}` : ""),
    `resumes: ${resumes}; attempts: ${kills + 1}`,
    `compared: ${cmp.bytes} bytes of checkpoint files, ${cmp.records} metric records, ` +
    `${cmp.events} TensorBoard events`,
    `wall time: ${wallS.toFixed(1)} s` + (o.keep ? `; folder ${root}` : ""),
    problems.length ? `FAILED: ${problems.length} problem(s)` : "OK: no difference, nothing left",
  ].join("\n");
  if (!o.keep) Deno.removeSync(root, { recursive: true });
  return {
    kills,
    atPoints,
    random,
    late,
    resumes,
    bytesCompared: cmp.bytes,
    wallS,
    problems,
    summary,
  };
}

if (import.meta.main) {
  const flag = (name: string, dflt: number) => {
    const i = Deno.args.indexOf(`--${name}`);
    const v = i >= 0 ? Number(Deno.args[i + 1]) : dflt;
    if (!Number.isInteger(v) || v < 0) throw new Error(`--${name}: expected an integer`);
    return v;
  };
  const res = await killSoak({
    kills: flag("kills", 50),
    seed: flag("seed", 1),
    steps: flag("steps", 20),
    keep: Deno.args.includes("--keep"),
    print: console.log,
  });
  for (const p of res.problems) console.error(`problem: ${p}`);
  console.log(res.summary);
  Deno.exit(res.problems.length ? 1 : 0);
}
