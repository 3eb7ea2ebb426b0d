/**
 * What a run does with its checkpoint folder before any work starts: take the folder's lock, clean
 * the leftovers of interrupted runs, pick the checkpoint `trainer.resume_mode` names, verify its
 * checksums and `extra_state.json`, and compare its saved config with this run's. A checkpoint
 * that fails is refused with the newest earlier one that passes and the override to resume from it.
 */
import { checkResumeConfig, diffConfigs } from "./config_diff.ts";
import { exists, parentOf } from "./durable.ts";
import { type ExtraState, ExtraStateError, readExtraState } from "./extra_state.ts";
import { acquireLock } from "./lock.ts";
import { checkWritable } from "./preflight.ts";
import {
  CheckpointError,
  cleanStray,
  listCheckpoints,
  readTracker,
  resolveResume,
  stepOfCheckpoint,
  TRACKER_FILE,
  writeTracker,
} from "./manager.ts";
import { CHECKSUM_FILE, verifyManifest } from "./manifest.ts";

export interface OpenOptions {
  /** trainer.default_local_dir */
  root: string;
  mode: string;
  resumeFromPath: string | null;
  /** The run writes checkpoints (save_freq > 0): it takes the folder's lock even when fresh. */
  saving: boolean;
  /** This run's resolved config as YAML, compared with the checkpoint's. */
  configYaml: string;
  /** trainer.resume_allowed_changes */
  allowedChanges: string[];
  print: (line: string) => void;
}

/** The checkpoint a run resumes from, checked. */
export interface ResumePoint {
  path: string;
  step: number;
  extra: ExtraState;
}

function realPath(p: string): string {
  try {
    return Deno.realPathSync(p);
  } catch {
    return p;
  }
}

/** Checks a checkpoint's files and extra state; a missing checksum file is only a warning. */
async function check(path: string, step: number, warn?: (line: string) => void) {
  const problem = await verifyManifest(path);
  if (problem?.why === "no checksum file") {
    warn?.(
      `warning: ${path} has no ${CHECKSUM_FILE} (written by an older webrl); its files are not ` +
        "verified",
    );
  } else if (problem) {
    throw new CheckpointError(`${problem.file} ${problem.why}`);
  }
  return readExtraState(path, step);
}

/** The newest checkpoint under `root` older than `below` that passes `check`, or null. */
async function previousGood(root: string, below: number): Promise<string | null> {
  for (const s of listCheckpoints(root).filter((s) => s < below).reverse()) {
    const p = `${root}/global_step_${s}`;
    try {
      await check(p, s);
      return p;
    } catch { /* try the one before */ }
  }
  return null;
}

/** The refusal of a bad checkpoint: what is wrong, and how to resume from the last good one. */
async function refuse(root: string, below: number, cause: Error): Promise<Error> {
  const good = exists(root) ? await previousGood(root, below) : null;
  const how = good
    ? `The newest earlier checkpoint that verifies is ${good}; to resume from it, run with ` +
      `trainer.resume_mode=resume_path trainer.resume_from_path=${realPath(good)}`
    : `No earlier checkpoint in ${root} verifies; start fresh with trainer.resume_mode=disable ` +
      "(or move the folder away).";
  return new CheckpointError(`refusing to resume: ${cause.message}. ${how}`, { cause });
}

/** Locks and cleans the folder, then returns the checked resume point (null: start fresh). */
export async function openCheckpoints(o: OpenOptions): Promise<ResumePoint | null> {
  if (o.saving || (o.mode !== "disable" && exists(o.root))) {
    checkWritable("trainer.default_local_dir", o.root);
    acquireLock(o.root, o.print);
    const removed = cleanStray(o.root);
    if (removed.length) {
      o.print(`removed leftovers of an interrupted run: ${removed.join(", ")}`);
    }
  }
  if (o.mode === "disable" && o.resumeFromPath) {
    o.print(
      `notice: trainer.resume_from_path=${o.resumeFromPath} is not used: ` +
        "trainer.resume_mode=disable starts fresh",
    );
  }
  let path: string | null;
  try {
    path = resolveResume(o.mode, { root: o.root, resumeFromPath: o.resumeFromPath });
  } catch (e) {
    // A tracker naming a missing folder, or holding garbage: point at the newest good checkpoint.
    if (o.mode !== "auto" || !(e instanceof CheckpointError)) throw e;
    const named = /names global_step_(\d+)/.exec(e.message);
    throw await refuse(o.root, named ? Number(named[1]) : Infinity, e);
  }
  if (!path) return null;
  const step = stepOfCheckpoint(path);
  let extra: ExtraState;
  try {
    extra = await check(path, step, o.print);
  } catch (e) {
    if (!(e instanceof CheckpointError || e instanceof ExtraStateError)) throw e;
    throw await refuse(parentOf(path), step, e);
  }
  if (extra.config) {
    checkResumeConfig(diffConfigs(extra.config, o.configYaml), {
      where: path,
      allowed: o.allowedChanges,
      print: o.print,
    });
  }
  // Resuming from an earlier checkpoint of this folder: it becomes the latest, so that a crash
  // before the next save resumes from it again, not from the abandoned newer ones.
  const latest = exists(o.root) ? readTracker(o.root) : null;
  if (realPath(parentOf(path)) === realPath(o.root) && latest !== null && latest !== step) {
    writeTracker(o.root, step);
    o.print(
      `${TRACKER_FILE} now names global_step_${step} (was ${latest}); newer checkpoints are ` +
        "replaced as this run reaches their steps",
    );
  }
  return { path, step, extra };
}
