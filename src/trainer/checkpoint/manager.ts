/**
 * Checkpoint folders in verl's layout: `{root}/global_step_N/{actor,critic}/...` and
 * `{root}/latest_checkpointed_iteration.txt`. A checkpoint is written into `global_step_N.tmp-{pid}`,
 * every file hashed into `checksums.sha256` (written last) and synced, and the folder renamed into
 * place only when complete; the tracker file is then replaced atomically. Pruning renames a
 * checkpoint to `.deleting-*` before deleting it. So a crash at any moment leaves the previous
 * checkpoint or the new one, plus leftovers that `cleanStray` removes at the next start.
 */
import { exists, fsync, removeAside, writeFileAtomic } from "./durable.ts";
import { hostName, ownerAlive } from "./lock.ts";
import { writeManifest } from "./manifest.ts";
import { killPoint } from "../kill_point.ts";

export { writeFileAtomic };

export const TRACKER_FILE = "latest_checkpointed_iteration.txt";
const STEP_RE = /^global_step_(\d+)$/;

export class CheckpointError extends Error {
  override name = "CheckpointError";
}

/** Steps of the checkpoint folders under root, ascending. */
export function listCheckpoints(root: string): number[] {
  if (!exists(root)) return [];
  const steps: number[] = [];
  for (const e of Deno.readDirSync(root)) {
    const m = e.isDirectory ? STEP_RE.exec(e.name) : null;
    if (m) steps.push(Number(m[1]));
  }
  return steps.sort((a, b) => a - b);
}

/** The step in the tracker file, null when there is none. */
export function readTracker(root: string): number | null {
  const tracker = `${root}/${TRACKER_FILE}`;
  if (!exists(tracker)) return null;
  const text = Deno.readTextFileSync(tracker).trim();
  if (!/^\d+$/.test(text)) {
    throw new CheckpointError(`${tracker}: expected a step number, found "${text}"`);
  }
  return Number(text);
}

export function writeTracker(root: string, step: number): void {
  writeFileAtomic(`${root}/${TRACKER_FILE}`, String(step));
}

export interface SaveOptions {
  /** Keep only the newest N checkpoint folders (SFT's max_ckpt_to_keep). */
  maxToKeep?: number | null;
  /**
   * Keep each part (sub-folder) only in the newest N checkpoints, as verl's
   * max_actor_ckpt_to_keep / max_critic_ckpt_to_keep; a folder left without parts is removed.
   */
  partsToKeep?: Record<string, number | null>;
}

/**
 * Saves a checkpoint: `write(tmpDir)` fills a temporary folder, which is checksummed, synced and
 * renamed to `global_step_{step}`; the tracker is updated and old checkpoints pruned. A failure
 * before the rename (including the writer refusing non-finite weights) leaves the checkpoints and
 * the tracker as they were.
 */
export async function saveCheckpoint(
  root: string,
  step: number,
  write: (dir: string) => Promise<void>,
  options: SaveOptions = {},
): Promise<string> {
  Deno.mkdirSync(root, { recursive: true });
  const final = `${root}/global_step_${step}`;
  const tmp = `${final}.tmp-${Deno.pid}`;
  if (exists(tmp)) Deno.removeSync(tmp, { recursive: true });
  Deno.mkdirSync(tmp);
  try {
    await write(tmp);
    await writeManifest(tmp);
  } catch (e) {
    Deno.removeSync(tmp, { recursive: true });
    let latest: number | null = null;
    try {
      latest = readTracker(root);
    } catch { /* named by the resume that reads it */ }
    throw new CheckpointError(
      `not saving global_step_${step}: ${(e as Error).message}. ` +
        (latest === null
          ? "No checkpoint was written."
          : `The checkpoints are unchanged; latest is still global_step_${latest}.`),
      { cause: e },
    );
  }
  killPoint("DURING_SAVE", step);
  if (exists(final)) {
    // Re-saving a step (a run resumed from an earlier one reached it again): swap, then delete.
    const old = `${root}/.deleting-global_step_${step}-${Deno.pid}`;
    Deno.renameSync(final, old);
    Deno.renameSync(tmp, final);
    fsync(root);
    Deno.removeSync(old, { recursive: true });
  } else {
    Deno.renameSync(tmp, final);
    fsync(root);
  }
  writeTracker(root, step);
  prune(root, step, options);
  cleanStray(root, { onlyDead: true });
  return final;
}

/**
 * Removes checkpoints beyond the limits, oldest first, among those up to `current` (newer ones
 * belong to a run this one resumed before, and are replaced as it reaches them).
 */
export function prune(root: string, current: number, o: SaveOptions): void {
  const steps = listCheckpoints(root).filter((s) => s <= current);
  const dir = (s: number) => `${root}/global_step_${s}`;
  const keep = o.maxToKeep;
  if (keep && keep > 0) {
    for (const s of steps.slice(0, Math.max(0, steps.length - keep))) {
      removeAside(dir(s), () => killPoint("DURING_PRUNE", current));
    }
  }
  for (const [part, n] of Object.entries(o.partsToKeep ?? {})) {
    if (!n || n <= 0) continue;
    const holding = listCheckpoints(root).filter((s) =>
      s <= current && exists(`${dir(s)}/${part}`)
    );
    for (const s of holding.slice(0, Math.max(0, holding.length - n))) {
      removeAside(`${dir(s)}/${part}`, () => killPoint("DURING_PRUNE", current));
    }
  }
  // A folder left without any part (pruned, or emptied by a crash mid-prune) goes too.
  const parts = Object.keys(o.partsToKeep ?? {});
  if (!parts.length || !Object.values(o.partsToKeep ?? {}).some((n) => n && n > 0)) return;
  for (const s of listCheckpoints(root).filter((s) => s < current)) {
    if (!parts.some((part) => exists(`${dir(s)}/${part}`))) removeAside(dir(s));
  }
}

/** Names of leftovers of interrupted saves, prunes and lock takeovers, with the owner's pid. */
const STRAY = [
  /^global_step_\d+\.tmp-(\d+)$/,
  /^\.deleting-.+-(\d+)$/,
  /^latest_checkpointed_iteration\.txt\.tmp-(\d+)$/,
  /^webrl\.lock\.(?:tmp|stale)-(\d+)$/,
  /^\.tmp_global_step_\d+_(\d+)$/, // older names
  /^\.old_global_step_\d+_(\d+)$/,
];

/**
 * Removes leftovers (`*.tmp-*`, `.deleting-*`, the tracker's temp file) in root and in each
 * checkpoint folder. `onlyDead` spares those of processes still running on this host (used
 * without the folder's lock); returns what was removed.
 */
export function cleanStray(root: string, o: { onlyDead?: boolean } = {}): string[] {
  if (!exists(root)) return [];
  const removed: string[] = [];
  const host = hostName();
  const sweep = (dir: string) => {
    for (const e of Deno.readDirSync(dir)) {
      const pid = STRAY.map((re) => re.exec(e.name)).find((m) => m)?.[1];
      if (pid === undefined) continue;
      if (o.onlyDead && ownerAlive({ pid: Number(pid), host, started: "" })) continue;
      Deno.removeSync(`${dir}/${e.name}`, { recursive: true });
      removed.push(`${dir}/${e.name}`);
    }
  };
  sweep(root);
  for (const s of listCheckpoints(root)) sweep(`${root}/global_step_${s}`);
  if (removed.length) fsync(root);
  return removed;
}

/** The newest checkpoint under root: the tracker's, else (no tracker) the highest folder. */
export function findLatestCheckpoint(root: string): string | null {
  const step = readTracker(root);
  if (step !== null) {
    const dir = `${root}/global_step_${step}`;
    if (!exists(dir)) {
      throw new CheckpointError(
        `${root}/${TRACKER_FILE} names global_step_${step}, which does not exist in ${root}`,
      );
    }
    return dir;
  }
  const steps = listCheckpoints(root);
  return steps.length ? `${root}/global_step_${steps.at(-1)}` : null;
}

/** The step number in a `global_step_N` path. */
export function stepOfCheckpoint(path: string): number {
  const name = path.replace(/\/+$/, "").split("/").at(-1) ?? "";
  const m = STEP_RE.exec(name);
  if (!m) {
    throw new CheckpointError(
      `trainer.resume_from_path: "${path}" must be a global_step_N checkpoint folder`,
    );
  }
  return Number(m[1]);
}

/**
 * verl's resume modes: `disable` starts fresh, `auto` takes the newest checkpoint under the
 * default folder if any, `resume_path` requires `resumeFromPath` to name a global_step_N folder.
 */
export function resolveResume(
  mode: string,
  options: { root: string; resumeFromPath?: string | null },
): string | null {
  switch (mode) {
    case "disable":
      return null;
    case "auto":
      return findLatestCheckpoint(options.root);
    case "resume_path": {
      const p = options.resumeFromPath;
      if (!p) {
        throw new CheckpointError(
          "trainer.resume_mode=resume_path needs trainer.resume_from_path",
        );
      }
      stepOfCheckpoint(p);
      if (!exists(p)) throw new CheckpointError(`trainer.resume_from_path: ${p} does not exist`);
      return p.replace(/\/+$/, "");
    }
    default:
      throw new CheckpointError(
        `trainer.resume_mode: unknown mode "${mode}" (valid: auto, disable, resume_path)`,
      );
  }
}
